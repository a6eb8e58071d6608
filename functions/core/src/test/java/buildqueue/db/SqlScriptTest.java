package buildqueue.db;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class SqlScriptTest {
  @Test
  void a_script_splits_into_statements_at_semicolons_outside_quotes_and_bodies() {
    String script = """
        -- a comment; with a semicolon
        create table a (x text default ';');
        create function f() returns int language sql as $$ select 1; $$;

        insert into a values ('x;y')
        """;
    assertThat(SqlScript.statements(script)).containsExactly(
        "create table a (x text default ';')",
        "create function f() returns int language sql as $$ select 1; $$",
        "insert into a values ('x;y')");
  }
}
