package dev.lakecommit.iceberg;

import java.util.List;
import org.apache.iceberg.types.Type;
import org.apache.iceberg.types.TypeUtil;
import org.apache.iceberg.types.Types;

/**
 * The one rule of which column types a table follows when its input changes, for the sink ({@code TableSetup})
 * and for the tool's schema planning alike: the same shape, or a primitive widened the way Iceberg allows (int to
 * long, float to double, a decimal to a larger precision of the same scale). Everything else is a type change
 * that stops a job.
 */
public final class TypeWidening {
  private TypeWidening() {}

  /** Whether {@code to} reads every value of {@code from}: primitives only, widening only (not the same type). */
  public static boolean widens(Type from, Type to) {
    return from.isPrimitiveType() && to.isPrimitiveType() && !from.equals(to)
        && TypeUtil.isPromotionAllowed(from, to.asPrimitiveType());
  }

  /** The type that reads both: either one if they have the same shape, else the wider primitive; null if none. */
  public static Type wider(Type a, Type b) {
    if (sameShape(a, b) || widens(b, a)) {
      return a;
    }
    return widens(a, b) ? b : null;
  }

  /** Types equal but for field ids (struct fields by name and order, list elements, map keys and values). */
  public static boolean sameShape(Type a, Type b) {
    if (a.isPrimitiveType() || b.isPrimitiveType()) {
      return a.equals(b);
    }
    if (a.typeId() != b.typeId()) {
      return false;
    }
    List<Types.NestedField> fa = a.asNestedType().fields();
    List<Types.NestedField> fb = b.asNestedType().fields();
    if (fa.size() != fb.size()) {
      return false;
    }
    for (int i = 0; i < fa.size(); i++) {
      if (a.isStructType() && !fa.get(i).name().equals(fb.get(i).name())) {
        return false;
      }
      if (!sameShape(fa.get(i).type(), fb.get(i).type())) {
        return false;
      }
    }
    return true;
  }
}
