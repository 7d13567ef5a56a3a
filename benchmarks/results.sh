#!/usr/bin/env bash
# The runs behind benchmarks/README.md's results, and its charts.
#
#   benchmarks/results.sh build                 # the suite and its class path (once; add -o offline via MVN_FLAGS)
#   benchmarks/results.sh run [NAME...]         # run the named benchmarks (default: all) into benchmarks/results/
#   benchmarks/results.sh charts [SUBTITLE]     # draw benchmarks/charts/*.png from benchmarks/results/*.json
#   benchmarks/results.sh tables                # print the results tables (medians, ratios) of benchmarks/results/
#
# NAME is one of: writer commit hive watermark flink flink-tables kafka kafka-latency restart maintenance pipelined spark
# hive-s3 cut.
# Each run writes JMH's JSON (-rf json) as benchmarks/results/NAME.json; a run overwrites its own file only.
set -euo pipefail
cd "$(dirname "$0")/.."
RESULTS=benchmarks/results
MVN_FLAGS=${MVN_FLAGS:-}

classpath() {
  [ -f benchmarks/target/classpath.txt ] || { echo "run '$0 build' first" >&2; exit 2; }
  echo "benchmarks/target/classes:$(cat benchmarks/target/classpath.txt)"
}

jmh() {  # jmh NAME [java options...] -- [JMH arguments...]
  local name=$1; shift
  local java_opts=()
  while [ "$1" != "--" ]; do java_opts+=("$1"); shift; done
  shift
  echo "== $name: java ${java_opts[*]} org.openjdk.jmh.Main $*"
  java "${java_opts[@]}" -cp "$(classpath)" org.openjdk.jmh.Main "$@" -rf json -rff "$RESULTS/$name.json"
}

merge() {  # merge JMH JSON files: one entry per benchmark and params, the samples of every file together
  jq -s 'add | group_by(.benchmark + (.params | tostring)) | map(.[0] + {primaryMetric: (.[0].primaryMetric + {
      rawData: (map(.primaryMetric.rawData) | add),
      score: (map(.primaryMetric.rawData) | add | add | add / length), scoreError: "NaN"})})' "$@"
}

run() {
  case "$1" in
    writer) jmh writer -- StagingWriterBenchmark -f 1 -wi 2 -i 3 -w 2s -r 2s ;;
    commit) jmh commit -- CommitLatencyBenchmark -p files=1,100,1000,10000 -p writers=8 -f 1 -wi 2 -i 10 ;;
    hive) jmh hive -Xms1g -Xmx1g -- HivePartitionCommitBenchmark -f 0 -wi 1 -i 5 -to 10m ;;
    watermark) jmh watermark -- WatermarkLookupBenchmark -f 1 -wi 2 -i 3 -w 1s -r 1s -to 10m ;;
    flink)
      # A JVM per variant, in the order iceberg, lakecommit, lakecommit, iceberg: both sinks in one JVM favour the
      # second (it meets a warm JIT), so the samples of the four JVMs are merged per variant.
      local parts=()
      for part in none bucket; do
        for v in iceberg lakecommit lakecommit iceberg; do
          parts+=("$RESULTS/flink-part-${#parts[@]}.json")
          jmh "flink-part-$((${#parts[@]} - 1))" -Xms2g -Xmx2g -- "FlinkSinkBenchmark.$v\$" -p rows=1000000 \
            -p parallelism=2 -p partitioning=$part -f 0 -wi 1 -i 3 -to 10m
        done
      done
      merge "${parts[@]}" > "$RESULTS/flink.json"
      rm -f "${parts[@]}" ;;
    kafka) jmh kafka -- 'KafkaIngestBenchmark.(kafka|file)$' -p rows=500000 -wi 1 -i 3 ;;
    kafka-latency) jmh kafka-latency -- 'KafkaIngestBenchmark.latency$' -p rows=1000 -p liveRows=50000 -p rate=5000 -wi 0 -i 3 ;;
    restart) jmh restart -- RestartBenchmark -p backlog=100000 -wi 1 -i 7 ;;
    maintenance) jmh maintenance -- MaintenanceBenchmark -p checkpoints=100,300 -f 1 -wi 1 -i 3 -w 2s -r 2s -to 30m ;;
    pipelined) jmh pipelined -- PipelinedCommitBenchmark -f 1 -wi 1 -i 2 ;;
    hive-s3) jmh hive-s3 -- HiveS3CommitBenchmark -f 1 -wi 1 -i 3 ;;
    cut) jmh cut -- CutCommitBenchmark -p tables=100 -f 1 -wi 3 -i 10 ;;
    # A forked JVM per variant and catalog.
    flink-tables) jmh flink-tables -- FlinkMultiTableBenchmark -p rows=1000000 -p tables=100 -f 1 -wi 1 -i 3 -to 20m ;;
    spark)
      # On tmpfs where there is one: at a disk's I/O wait, single runs of either side move by up to 40 %.
      local work; work=$([ -d /dev/shm ] && echo /dev/shm || echo "${TMPDIR:-/tmp}")/ingest-vs-spark-$$
      echo "== spark: IngestVsSpark --rows 1000000 --rounds 3 --warmup 1 --work $work"
      java -cp "benchmarks/spark-peer/target/classes:$(cat benchmarks/spark-peer/target/classpath.txt)" \
        dev.lakecommit.bench.spark.IngestVsSpark --rows 1000000 --rounds 3 --warmup 1 --work "$work" \
        --json "$RESULTS/spark.json"
      rm -rf "$work" ;;
    *) echo "unknown benchmark: $1" >&2; exit 2 ;;
  esac
}

case "${1:-}" in
  build)
    mvn -B -q -T1 $MVN_FLAGS -DskipTests -pl benchmarks,benchmarks/spark-peer,ingest -am package dependency:build-classpath \
      -Dmdep.outputFile=target/classpath.txt -DincludeScope=runtime ;;
  run)
    shift
    mkdir -p "$RESULTS"
    names=("$@")
    [ ${#names[@]} -gt 0 ] || names=(writer commit hive watermark flink flink-tables kafka kafka-latency restart maintenance pipelined spark hive-s3 cut)
    for name in "${names[@]}"; do run "$name"; done ;;
  charts)
    java -Djava.awt.headless=true -cp "$(classpath)" dev.lakecommit.bench.Charts --out benchmarks/charts \
      --subtitle "${2:-$(nproc) cores, $(date -u +%F)}" "$RESULTS"/*.json ;;
  tables)
    java -cp "$(classpath)" dev.lakecommit.bench.ResultsTable "$RESULTS"/*.json ;;
  *)
    sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
