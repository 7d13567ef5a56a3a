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
    assertThat(reachability.observe(5, true, 100 * MS, 100 * MS)).isFalse();
    long now = 100 * MS;
    for (int poll = 0; poll < 5; poll++) { // 2.5 s of polls without an answer
      now += 500 * MS;
      assertThat(reachability.observe(5, true, now, 500 * MS)).as("poll %s", poll).isFalse();
    }
    now += 500 * MS;
    assertThat(reachability.observe(5, true, now, 500 * MS)).as("3 s without an answer").isTrue();
    now += 500 * MS;
    assertThat(reachability.observe(5, true, now, 500 * MS)).isTrue();
    assertThat(reachability.observe(6, true, now + 500 * MS, 500 * MS)).as("an answer").isFalse();
    assertThat(reachability.observe(6, true, now + 1000 * MS, 500 * MS)).isFalse();
  }

  @Test
  void silenceWhileNothingIsFetchedOrNothingPollsIsNoOutage() {
    BrokerReachability reachability = new BrokerReachability("b:9092", Duration.ofSeconds(3), 0);
    reachability.observe(5, true, 0, 0);
    // every partition paused: nothing asked, for a minute
    for (long now = 500 * MS; now <= 60_000 * MS; now += 500 * MS) {
      assertThat(reachability.observe(5, false, now, 500 * MS)).isFalse();
    }
    // fetching again; then a 10 s stretch without a poll (the writers were busy) counts as one second
    assertThat(reachability.observe(5, true, 60_500 * MS, 50 * MS)).isFalse();
    assertThat(reachability.observe(5, true, 70_500 * MS, 50 * MS)).isFalse();
    assertThat(reachability.answeredLately()).as("a stretch without polls asked the brokers nothing").isTrue();
    assertThat(reachability.observe(5, true, 80_500 * MS, 50 * MS)).isFalse();
    assertThat(reachability.observe(5, true, 90_500 * MS, 50 * MS)).as("three such stretches reach the limit").isTrue();
  }

  @Test
  void aClientWithoutTheMetricIsNeverJudged() {
    BrokerReachability reachability = new BrokerReachability("b:9092", Duration.ofSeconds(3), 0);
    for (long now = 0; now <= 60_000 * MS; now += 500 * MS) {
      assertThat(reachability.observe(Double.NaN, true, now, 500 * MS)).isFalse();
    }
  }

  @Test
  void answeredLatelyUntilASecondOfPolledSilence() {
    BrokerReachability reachability = new BrokerReachability("b:9092", Duration.ofSeconds(3), 0);
    reachability.observe(5, true, 0, 0);
    assertThat(reachability.answeredLately()).isTrue();
    reachability.observe(5, true, 600 * MS, 600 * MS);
    assertThat(reachability.answeredLately()).as("a fetch wait without an answer").isTrue();
    reachability.observe(5, true, 1_100 * MS, 500 * MS);
    assertThat(reachability.answeredLately()).as("1.1 s of polls without an answer").isFalse();
    reachability.observe(6, true, 1_200 * MS, 100 * MS);
    assertThat(reachability.answeredLately()).isTrue();
  }

  /**
   * A job busy elsewhere (a slow commit, writers at their limit) does not poll: the brokers were asked nothing
   * meanwhile, so a short poll after it that finds no answer yet does not make them look silent — records held
   * back for a partition whose fetch is coming stay held, and a checkpoint cut leaves no older event time behind.
   */
  @Test
  void aStretchWithoutPollsIsNoSilence() {
    BrokerReachability reachability = new BrokerReachability("b:9092", Duration.ofSeconds(3), 0);
    reachability.observe(5, true, 0, 0);
    reachability.observe(5, true, 7_000 * MS, 50 * MS); // 7 s busy, then a 50 ms poll without an answer
    assertThat(reachability.answeredLately()).isTrue();
    for (long now = 7_050 * MS; now < 7_900 * MS; now += 50 * MS) {
      reachability.observe(5, true, now + 50 * MS, 50 * MS);
    }
    assertThat(reachability.answeredLately()).as("0.9 s of polls without an answer").isTrue();
    reachability.observe(5, true, 8_000 * MS, 100 * MS);
    assertThat(reachability.answeredLately()).as("1 s of polls without an answer").isFalse();
  }
}
