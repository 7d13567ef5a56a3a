package dev.lakecommit.core.testing;

import java.util.BitSet;
import java.util.Collection;

/**
 * The exactly-once audit of a table whose rows carry the keys {@code 0 .. sourceRows-1}: rows seen, keys seen
 * more than once, keys missing.
 */
public record Audit(long sourceRows, long tableRows, long duplicateKeys, long lostKeys, long foreignKeys) {

  public static Audit of(long sourceRows, Collection<Long> keys) {
    BitSet seen = new BitSet();
    BitSet twice = new BitSet();
    long foreign = 0;
    for (long key : keys) {
      if (key < 0 || key >= sourceRows) {
        foreign++;
      } else if (seen.get((int) key)) {
        twice.set((int) key);
      } else {
        seen.set((int) key);
      }
    }
    return new Audit(sourceRows, keys.size(), twice.cardinality(), sourceRows - seen.cardinality(), foreign);
  }

  public boolean exact() {
    return duplicateKeys == 0 && lostKeys == 0 && foreignKeys == 0 && tableRows == sourceRows;
  }

  public double duplicateRate() {
    return tableRows == 0 ? 0 : (double) duplicateKeys / tableRows;
  }

  public double lossRate() {
    return sourceRows == 0 ? 0 : (double) lostKeys / sourceRows;
  }

  @Override
  public String toString() {
    return String.format("source rows %d, table rows %d, duplicate keys %d, lost keys %d, foreign keys %d",
        sourceRows, tableRows, duplicateKeys, lostKeys, foreignKeys);
  }
}
