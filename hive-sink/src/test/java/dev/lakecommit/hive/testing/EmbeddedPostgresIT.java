package dev.lakecommit.hive.testing;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

class EmbeddedPostgresIT {
  private static EmbeddedPostgres pg;

  @BeforeAll
  static void startPostgres() {
    pg = EmbeddedPostgres.startNew();
  }

  @AfterAll
  static void stopPostgres() {
    if (pg != null) {
      pg.close();
    }
  }

  @Test
  void createsDatabasesOnDemand() throws SQLException {
    String url = pg.createDatabase("orders");
    assertThat(url).isEqualTo("jdbc:postgresql://127.0.0.1:" + pg.port() + "/orders");
    assertThat(pg.createDatabase("orders")).as("idempotent").isEqualTo(url);
    try (Connection conn = pg.connect("orders");
        Statement st = conn.createStatement();
        ResultSet rs = st.executeQuery("SELECT current_database(), inet_server_addr()::text")) {
      assertThat(rs.next()).isTrue();
      assertThat(rs.getString(1)).isEqualTo("orders");
      assertThat(rs.getString(2)).startsWith("127.0.0.1");
    }
    assertThatThrownBy(() -> pg.createDatabase("Robert'); DROP"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("Invalid database name");
  }

  @Test
  void restartsOnSamePortWithItsData() throws SQLException {
    pg.createDatabase("restart");
    try (Connection conn = pg.connect("restart");
        Statement st = conn.createStatement()) {
      st.execute("CREATE TABLE marks (id int PRIMARY KEY)");
      st.execute("INSERT INTO marks VALUES (1), (2)");
    }
    int port = pg.port();
    Path data = pg.dataDirectory();
    Connection survivor = pg.connect("restart");
    try {
      pg.stop();
      assertThat(pg.isRunning()).isFalse();
      assertThatThrownBy(() -> pg.connect("restart").close())
          .as("nothing listens while stopped")
          .isInstanceOf(SQLException.class);
      assertThatThrownBy(() -> survivor.createStatement().executeQuery("SELECT 1"))
          .as("open sessions end with the server")
          .isInstanceOf(SQLException.class);
      assertThatCode(pg::stop).as("stopping a stopped server").doesNotThrowAnyException();

      pg.start();
      assertThat(pg.port()).isEqualTo(port);
      assertThat(pg.dataDirectory()).isEqualTo(data);
      assertThatThrownBy(pg::start).isInstanceOf(IllegalStateException.class).hasMessageContaining("running");
      try (Connection conn = pg.connect("restart");
          Statement st = conn.createStatement();
          ResultSet rs = st.executeQuery("SELECT count(*) FROM marks")) {
        assertThat(rs.next()).isTrue();
        assertThat(rs.getInt(1)).isEqualTo(2);
      }
    } finally {
      survivor.close();
      if (!pg.isRunning()) {
        pg.start();
      }
    }
  }

  @Test
  void closeDeletesTheDataDirectory() {
    EmbeddedPostgres other = EmbeddedPostgres.startNew();
    Path data = other.dataDirectory();
    assertThat(data).isDirectory();
    assertThat(other.port()).isNotEqualTo(pg.port());

    other.close();
    assertThat(Files.exists(data)).isFalse();
    assertThatThrownBy(other::start).isInstanceOf(IllegalStateException.class).hasMessageContaining("closed");
  }
}
