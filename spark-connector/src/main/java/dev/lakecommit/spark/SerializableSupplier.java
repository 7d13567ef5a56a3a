package dev.lakecommit.spark;

import java.io.Serializable;
import java.util.function.Supplier;

/**
 * Builds a sink configuration wherever Spark runs a part of the write: on the driver and in every executor. Sink
 * configurations hold live objects (a Hadoop {@code Configuration}, a metastore client factory) that do not travel
 * between JVMs, so the adapter ships this recipe instead. Write it as a lambda that captures only serializable
 * values (strings, maps, Iceberg schemas).
 *
 * @param <T> the configuration built
 */
@FunctionalInterface
public interface SerializableSupplier<T> extends Supplier<T>, Serializable {}
