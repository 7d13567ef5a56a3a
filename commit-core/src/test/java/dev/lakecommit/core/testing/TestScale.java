package dev.lakecommit.core.testing;

/** Test sizes: small in the default build, acceptance sizes with {@code mvn -Plong verify}. */
public final class TestScale {
  private TestScale() {}

  public static boolean isLong() {
    return "long".equals(System.getProperty("lakecommit.test.scale"));
  }

  /** {@code small} in the default build, {@code large} in the long profile. */
  public static int pick(int small, int large) {
    return isLong() ? large : small;
  }

  /** A seed from {@code -Dlakecommit.seed=N}, or a fresh one; tests print it with every failure. */
  public static long seed() {
    String fixed = System.getProperty("lakecommit.seed");
    return fixed != null ? Long.parseLong(fixed) : System.nanoTime();
  }
}
