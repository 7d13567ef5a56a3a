package dev.lakecommit.core.testing;

import dev.lakecommit.core.runtime.CheckpointedSource;
import java.nio.ByteBuffer;

/** The keys {@code 0 .. count-1}; the position is the next key, as 8 bytes. */
public record RangeSource(long count) implements CheckpointedSource<Long> {

  @Override
  public SourceReader<Long> open(byte[] position) {
    long start = position == null ? 0 : ByteBuffer.wrap(position).getLong();
    return new SourceReader<>() {
      private long next = start;

      @Override
      public Long next() {
        return next < count ? next++ : null;
      }

      @Override
      public byte[] position() {
        return ByteBuffer.allocate(8).putLong(next).array();
      }

      @Override
      public void close() {}
    };
  }
}
