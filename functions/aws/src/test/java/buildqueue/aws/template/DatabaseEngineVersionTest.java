package buildqueue.aws.template;

import static org.assertj.core.api.Assertions.assertThat;

import buildqueue.aws.testing.SampleEvents;
import buildqueue.testing.TestDatabases;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The tests run the database AWS runs: the embedded PostgreSQL (the parent pom's {@code
 * postgres-binaries.version}, which the local runtime and the benchmarks run too) has the major
 * version of the template's Aurora PostgreSQL. A statement, plan or privilege default that differs
 * between majors then shows here, not on the first deploy.
 */
class DatabaseEngineVersionTest {
  @Test
  void the_embedded_postgresql_has_the_major_version_of_the_templates_aurora_postgresql()
      throws Exception {
    CfnTemplate template = CfnTemplate.load(SampleEvents.repoFile("template.yaml"));
    Map<String, Object> cluster =
        CfnTemplate.map(template.resource("DatabaseCluster").get("Properties"));
    assertThat(cluster.get("Engine")).isEqualTo("aurora-postgresql");
    String engineVersion = String.valueOf(cluster.get("EngineVersion"));
    assertThat(engineVersion).as("EngineVersion is pinned as MAJOR.MINOR").matches("\\d+\\.\\d+");
    int templateMajor = Integer.parseInt(engineVersion.substring(0, engineVersion.indexOf('.')));

    int serverVersionNum;
    try (Connection c = TestDatabases.postgres().getPostgresDatabase().getConnection();
        Statement s = c.createStatement();
        ResultSet r = s.executeQuery("show server_version_num")) {
      r.next();
      serverVersionNum = Integer.parseInt(r.getString(1));
    }

    assertThat(serverVersionNum / 10000)
        .as(
            "embedded PostgreSQL %d against the template's Aurora PostgreSQL %s: set postgres-binaries.version"
                + " in the parent pom to a %d.x release of io.zonky.test.postgres binaries",
            serverVersionNum, engineVersion, templateMajor)
        .isEqualTo(templateMajor);
  }
}
