package buildqueue.db;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class SqlScriptTest {
  @Test
  void a_script_splits_into_statements_at_semicolons_outside_quotes_and_bodies() {
    String script =
        """
        -- a comment; with a semicolon
        create table a (x text default ';');
        create function f() returns int language sql as $$ select 1; $$;

        insert into a values ('x;y')
        """;
    assertThat(SqlScript.statements(script))
        .containsExactly(
            "create table a (x text default ';')",
            "create function f() returns int language sql as $$ select 1; $$",
            "insert into a values ('x;y')");
  }

  @Test
  void a_body_with_semicolons_is_sent_as_the_same_escape_string_and_one_without_as_written() {
    String script =
        """
        create function f() returns text language plpgsql as $$
        begin return 'a;b\\'; end;
        $$;
        create function g() returns int language sql as $$ select 1 $$;
        """;
    assertThat(SqlScript.sendable(script))
        .containsExactly(
            "create function f() returns text language plpgsql as E'\nbegin return ''a\\073b\\\\''\\073 end\\073\n'",
            "create function g() returns int language sql as $$ select 1 $$");
  }
}
