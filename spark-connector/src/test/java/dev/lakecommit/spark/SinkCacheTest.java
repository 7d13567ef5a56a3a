package dev.lakecommit.spark;

import static org.assertj.core.api.Assertions.assertThat;

import dev.lakecommit.core.Sink;
import dev.lakecommit.core.SupportsAggregatedCommitter;
import java.lang.reflect.Proxy;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.junit.jupiter.api.Test;

/**
 * Past its bound, the JVM's sink cache closes the least recently used sinks no lease holds (their catalogs with
 * them), and never a sink a lease holds.
 */
class SinkCacheTest {
  private static final StructType SCHEMA = new StructType().add("id", DataTypes.LongType);

  /** A target whose sinks count their closes. */
  private static final class CountingRecipe extends SinkRecipe {
    private static final long serialVersionUID = 1L;
    final transient AtomicInteger closed = new AtomicInteger();

    @Override
    String describe() {
      return "a counting target";
    }

    @Override
    Opened<?, ?> open(StructType schema) {
      Object sink = Proxy.newProxyInstance(getClass().getClassLoader(),
          new Class<?>[] {Sink.class, SupportsAggregatedCommitter.class}, (proxy, method, args) -> {
            if (method.getName().equals("close")) {
              closed.incrementAndGet();
              return null;
            }
            throw new UnsupportedOperationException(method.getName());
          });
      @SuppressWarnings("unchecked")
      Opened<?, ?> opened = new Opened<>((Sink<org.apache.spark.sql.catalyst.InternalRow,
          dev.lakecommit.staging.StagingManifest, ?>) sink,
          (SupportsAggregatedCommitter<dev.lakecommit.staging.StagingManifest, Object>) sink);
      return opened;
    }
  }

  @Test
  void unusedSinksPastTheBoundAreClosedAndLeasedOnesAreKept() {
    CountingRecipe held = new CountingRecipe();
    SinkCache.Lease lease = SinkCache.open(held, SCHEMA);
    List<CountingRecipe> others = new ArrayList<>();
    for (int i = 0; i < SinkCache.MAX_SINKS + 4; i++) {
      CountingRecipe other = new CountingRecipe();
      others.add(other);
      SinkCache.open(other, SCHEMA).close();
    }

    assertThat(held.closed).as("the leased sink, the least recently used").hasValue(0);
    assertThat(SinkCache.size()).isEqualTo(SinkCache.MAX_SINKS);
    assertThat(others.stream().filter(o -> o.closed.get() == 1).count()).as("unused sinks closed").isEqualTo(5);
    assertThat(others.stream().allMatch(o -> o.closed.get() <= 1)).isTrue();
    // the same target and schema again: the cached sink, not a new one
    SinkCache.Lease again = SinkCache.open(others.get(others.size() - 1), SCHEMA);
    assertThat(again.opened()).isSameAs(SinkCache.open(others.get(others.size() - 1), SCHEMA).opened());

    lease.close();
    lease.close(); // a second close releases nothing more
    SinkCache.open(new CountingRecipe(), SCHEMA).close();
    assertThat(held.closed).as("released and least recently used").hasValue(1);
  }
}
