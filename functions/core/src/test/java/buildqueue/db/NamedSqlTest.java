package buildqueue.db;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class NamedSqlTest {
  @Test
  void named_parameters_become_positional_and_repeat_in_order() {
    NamedSql sql = NamedSql.parse("select :a, :b_2, :a from t where x = :b_2");
    assertThat(sql.jdbcSql()).isEqualTo("select ?, ?, ? from t where x = ?");
    assertThat(sql.names()).containsExactly("a", "b_2", "a", "b_2");
  }

  @Test
  void casts_literals_identifiers_comments_and_dollar_quotes_are_left_alone() {
    String text =
        "select :x::uuid, ':not', \":nor\" -- :comment\n, /* :block */ $$ :body $$, $t$ :tagged $t$, $1";
    NamedSql sql = NamedSql.parse(text);
    assertThat(sql.names()).containsExactly("x");
    assertThat(sql.jdbcSql()).isEqualTo(text.replaceFirst(":x", "?"));
  }

  @Test
  void doubled_quotes_inside_a_literal_do_not_end_it() {
    assertThat(NamedSql.parse("select 'it''s :not', :yes").names()).containsExactly("yes");
  }
}
