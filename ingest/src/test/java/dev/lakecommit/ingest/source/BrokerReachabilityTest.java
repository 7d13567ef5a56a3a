package dev.lakecommit.ingest.source;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;

class BrokerReachabilityTest {
  private static final long MS = 1_000_000L;

  @Test
  void theLimitIsThreeSecondsOrFourFetchWaits() {
    assertThat(BrokerReachability.quietLimit(Map.of())).isEqualTo(Duration.ofSeconds(3));
    assertThat(BrokerReachability.quietLimit(Map.of("fetch.max.wait.ms", "2000"))).isEqualTo(Duration.ofSeconds(8));
    assertThat(BrokerReachability.quietLimit(Map.of("fetch.max.wait.ms", "x"))).isEqualTo(Duration.ofSeconds(3));
  }

  @Test
  void polledWithoutAnswersPastTheLimitIsAnOutageUntilTheNextAnswer() {
    BrokerReachability reachability = new BrokerReachability("b:9092", Duration.ofSeconds(3), 0);
    assertThat(reachability.observe(5, true, 100 * MS)).isFalse();
    long now = 100 * MS;
    for (int poll = 0; poll < 5; poll++) { // 2.5 s of polls without an answer
      now += 500 * MS;
      assertThat(reachability.observe(5, true, now)).as("poll %s", poll).isFalse();
    }
    now += 500 * MS;
    assertThat(reachability.observe(5, true, now)).as("3 s without an answer").isTrue();
    now += 500 * MS;
    assertThat(reachability.observe(5, true, now)).isTrue();
    assertThat(reachability.observe(6, true, now + 500 * MS)).as("an answer").isFalse();
    assertThat(reachability.observe(6, true, now + 1000 * MS)).isFalse();
  }

  @Test
  void silenceWhileNothingIsFetchedOrNothingPollsIsNoOutage() {
    BrokerReachability reachability = new BrokerReachability("b:9092", Duration.ofSeconds(3), 0);
    reachability.observe(5, true, 0);
    // every partition paused: nothing asked, for a minute
    for (long now = 500 * MS; now <= 60_000 * MS; now += 500 * MS) {
      assertThat(reachability.observe(5, false, now)).isFalse();
    }
    // fetching again; then a 10 s stretch without a poll (the writers were busy) counts as one second
    assertThat(reachability.observe(5, true, 60_500 * MS)).isFalse();
    assertThat(reachability.observe(5, true, 70_500 * MS)).isFalse();
    assertThat(reachability.observe(5, true, 80_500 * MS)).isFalse();
    assertThat(reachability.observe(5, true, 90_500 * MS)).as("three such stretches reach the limit").isTrue();
  }

  @Test
  void aClientWithoutTheMetricIsNeverJudged() {
    BrokerReachability reachability = new BrokerReachability("b:9092", Duration.ofSeconds(3), 0);
    for (long now = 0; now <= 60_000 * MS; now += 500 * MS) {
      assertThat(reachability.observe(Double.NaN, true, now)).isFalse();
    }
  }

  @Test
  void answeredLatelyUntilASecondOfPolledSilence() {
    BrokerReachability reachability = new BrokerReachability("b:9092", Duration.ofSeconds(3), 0);
    reachability.observe(5, true, 0);
    assertThat(reachability.answeredLately()).isTrue();
    reachability.observe(5, true, 600 * MS);
    assertThat(reachability.answeredLately()).as("a fetch wait without an answer").isTrue();
    reachability.observe(5, true, 1_100 * MS);
    assertThat(reachability.answeredLately()).as("1.1 s without an answer").isFalse();
    reachability.observe(6, true, 1_200 * MS);
    assertThat(reachability.answeredLately()).isTrue();
  }
}
