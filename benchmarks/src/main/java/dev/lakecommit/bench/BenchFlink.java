package dev.lakecommit.bench;

import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.RestOptions;
import org.apache.flink.configuration.RestartStrategyOptions;
import org.apache.flink.configuration.TaskManagerOptions;
import org.apache.flink.runtime.minicluster.MiniCluster;
import org.apache.flink.runtime.minicluster.MiniClusterConfiguration;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;

/** The Flink benchmarks' cluster and job settings, the same for every sink they compare. */
final class BenchFlink {
  private BenchFlink() {}

  /** A started MiniCluster of one task manager with {@code slots} slots, its REST endpoint on loopback only. */
  static MiniCluster startCluster(int slots) throws Exception {
    Configuration conf = new Configuration();
    conf.set(TaskManagerOptions.NUM_TASK_SLOTS, slots);
    conf.set(RestOptions.BIND_ADDRESS, "127.0.0.1");
    conf.set(RestOptions.ADDRESS, "127.0.0.1");
    conf.set(RestOptions.BIND_PORT, "0");
    MiniCluster cluster = new MiniCluster(new MiniClusterConfiguration.Builder().setConfiguration(conf)
        .setNumTaskManagers(1).setNumSlotsPerTaskManager(slots).build());
    cluster.start();
    return cluster;
  }

  /** A job's environment: no restarts, checkpoints every {@code checkpointMillis}. */
  static StreamExecutionEnvironment environment(int parallelism, long checkpointMillis) {
    Configuration conf = new Configuration();
    conf.set(RestartStrategyOptions.RESTART_STRATEGY, "none");
    StreamExecutionEnvironment env = new StreamExecutionEnvironment(conf);
    env.setParallelism(parallelism);
    env.enableCheckpointing(checkpointMillis);
    return env;
  }
}
