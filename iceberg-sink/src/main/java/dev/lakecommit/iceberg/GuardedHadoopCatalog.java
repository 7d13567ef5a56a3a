package dev.lakecommit.iceberg;

import java.util.HashMap;
import java.util.Locale;
import java.util.Map;
import java.util.function.Supplier;
import org.apache.hadoop.fs.Path;
import org.apache.iceberg.CatalogProperties;
import org.apache.iceberg.CatalogUtil;
import org.apache.iceberg.TableMetadata;
import org.apache.iceberg.TableOperations;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.exceptions.CommitFailedException;
import org.apache.iceberg.exceptions.ValidationException;
import org.apache.iceberg.hadoop.HadoopCatalog;
import org.apache.iceberg.hadoop.HadoopTableOperations;
import org.apache.iceberg.util.LockManagers;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Iceberg's Hadoop catalog, safe with the bounded metadata history that Lakecommit gives its tables
 * ({@code write.metadata.delete-after-commit.enabled}, {@code previous-versions-max}).
 *
 * <p>A Hadoop table commits version {@code n + 1} by renaming a file to {@code v<n+1>.metadata.json}, refused if that
 * file exists; the version {@code n} is the one its table object read last. Once more than
 * {@code previous-versions-max} newer versions have been committed, version {@code n + 1}'s file has been deleted
 * again, so a table object that read version {@code n} before those commits (a long compaction attempt, a job with
 * long checkpoint intervals beside a fast one) could commit "version {@code n + 1}" once more: the rename succeeds,
 * the version hint points at a fork of the history without the commits in between, and one side's commits are lost.
 * Such an object also cannot refresh any more ({@code Metadata file for version n is missing}).
 *
 * <p>Here every table's operations check before each commit that the metadata file they read still exists, and
 * the lock around the rename ({@link HadoopCommitLock}) checks again, once taken, that the version the attempt is
 * built on is still the newest — an attempt may wait for the lock while many commits land. Either refuses the
 * attempt as a lost race; and a refresh that finds its own version gone reads the table again from the version
 * hint. Iceberg's retry then re-applies the commit on the table as it is.
 */
public class GuardedHadoopCatalog extends HadoopCatalog {
  private static final Logger LOG = LoggerFactory.getLogger(GuardedHadoopCatalog.class);
  private Map<String, String> properties = Map.of();
  private HadoopCommitLock commitLock;

  /**
   * {@code properties} with this catalog in place of Iceberg's Hadoop catalog ({@code type=hadoop} or its
   * {@code catalog-impl}); other catalogs' properties unchanged.
   */
  static Map<String, String> substitute(Map<String, String> properties) {
    String type = properties.get(CatalogUtil.ICEBERG_CATALOG_TYPE);
    String impl = properties.get(CatalogProperties.CATALOG_IMPL);
    boolean hadoop = impl == null ? type != null && CatalogUtil.ICEBERG_CATALOG_TYPE_HADOOP.equals(
        type.toLowerCase(Locale.ROOT)) : HadoopCatalog.class.getName().equals(impl);
    if (!hadoop) {
      return properties;
    }
    Map<String, String> guarded = new HashMap<>(properties);
    guarded.remove(CatalogUtil.ICEBERG_CATALOG_TYPE);
    guarded.put(CatalogProperties.CATALOG_IMPL, GuardedHadoopCatalog.class.getName());
    return guarded;
  }

  @Override
  public void initialize(String name, Map<String, String> catalogProperties) {
    super.initialize(name, catalogProperties);
    this.properties = Map.copyOf(catalogProperties);
    this.commitLock = commitLock(HadoopCommitLock.Options.ALL);
  }

  /** Test seam: the commit lock with other options (without a check, or with hooks). */
  void withCommitLock(HadoopCommitLock.Options options) {
    this.commitLock = commitLock(options);
  }

  private HadoopCommitLock commitLock(HadoopCommitLock.Options options) {
    return new HadoopCommitLock(properties.containsKey(CatalogProperties.LOCK_IMPL)
        ? LockManagers.from(properties) : null, getConf(), properties, options);
  }

  @Override
  public void close() throws java.io.IOException {
    try {
      super.close();
    } finally {
      try {
        if (commitLock != null) {
          commitLock.close();
        }
      } catch (Exception e) {
        LOG.warn("Could not close the commit lock of catalog {}: {}", name(), e.toString());
      }
    }
  }

  @Override
  protected TableOperations newTableOps(TableIdentifier identifier) {
    return new Operations(identifier, () -> {
      TableOperations plain = super.newTableOps(identifier); // for the catalog's FileIO, which it keeps private
      return new HadoopTableOperations(new Path(defaultWarehouseLocation(identifier)), plain.io(), getConf(),
          commitLock) { };
    });
  }

  /** A Hadoop table's operations that never commit on, or refresh from, a version whose file is gone. */
  static final class Operations extends ForwardingTableOperations {
    private final TableIdentifier identifier;
    private final Supplier<TableOperations> load;
    private volatile TableOperations current;
    private volatile int reloads;

    Operations(TableIdentifier identifier, Supplier<TableOperations> load) {
      this(identifier, load, load.get());
    }

    private Operations(TableIdentifier identifier, Supplier<TableOperations> load, TableOperations first) {
      super(first);
      this.identifier = identifier;
      this.load = load;
      this.current = first;
    }

    /** The operations of the table as last read again (see {@link #refresh}). */
    @Override
    protected TableOperations delegate() {
      return current;
    }

    /** How many times a refresh found its version gone and read the table again from the version hint. */
    int reloads() {
      return reloads;
    }

    @Override
    public TableMetadata current() {
      // A Hadoop table's current() refreshes after its own commits.
      return readingAgainIfGone(() -> current.current());
    }

    @Override
    public TableMetadata refresh() {
      return readingAgainIfGone(() -> current.refresh());
    }

    private TableMetadata readingAgainIfGone(Supplier<TableMetadata> read) {
      try {
        return read.get();
      } catch (ValidationException e) {
        if (e.getMessage() == null || !e.getMessage().startsWith("Metadata file for version")) {
          throw e;
        }
        LOG.info("Table {}: {} (more than write.metadata.previous-versions-max commits since it was read); "
            + "reading it again", identifier, e.getMessage());
        reloads++;
        current = load.get();
        return current.refresh();
      }
    }

    @Override
    public void commit(TableMetadata base, TableMetadata metadata) {
      if (base != null && base.metadataFileLocation() != null
          && !io().newInputFile(base.metadataFileLocation()).exists()) {
        throw new CommitFailedException("Cannot commit to table %s on metadata %s: the file was deleted since it "
            + "was read (more than write.metadata.previous-versions-max newer commits), and committing the version "
            + "after it could fork the table's history", identifier, base.metadataFileLocation());
      }
      current.commit(base, metadata);
    }
  }
}
