package dev.lakecommit.flink;

import dev.lakecommit.core.SimpleVersionedSerializer;
import java.io.IOException;
import java.util.Objects;

/** Lakecommit's versioned serializers as Flink's: same version numbers, same bytes. */
final class FlinkSerializers {
  private FlinkSerializers() {}

  static <T> org.apache.flink.core.io.SimpleVersionedSerializer<T> of(SimpleVersionedSerializer<T> core) {
    return new Adapter<>(core);
  }

  /**
   * A serializer of values of a subtype as a serializer of the supertype that a Flink operator is typed with; given
   * a value of another subtype, it fails with a {@link ClassCastException}.
   */
  @SuppressWarnings("unchecked")
  static <T> SimpleVersionedSerializer<T> erase(SimpleVersionedSerializer<? extends T> core) {
    return (SimpleVersionedSerializer<T>) core;
  }

  private static final class Adapter<T> implements org.apache.flink.core.io.SimpleVersionedSerializer<T> {
    private final SimpleVersionedSerializer<T> core;

    Adapter(SimpleVersionedSerializer<T> core) {
      this.core = Objects.requireNonNull(core, "core");
    }

    @Override
    public int getVersion() {
      return core.version();
    }

    @Override
    public byte[] serialize(T value) throws IOException {
      return core.serialize(value);
    }

    @Override
    public T deserialize(int version, byte[] serialized) throws IOException {
      return core.deserialize(version, serialized);
    }
  }
}
