package buildqueue.aws.db;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import buildqueue.aws.fake.DataApiFake.Operation;
import buildqueue.db.DatabaseException;
import buildqueue.db.Params;
import buildqueue.db.UniqueViolationException;
import buildqueue.testing.Rows;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Begin, commit, rollback, joining, and what a SQL error does to a transaction. */
class DataApiTransactionsTest extends DataApiAdapterTest {
  private static final String INSERT_USER = "insert into build_user (user_id) values (:u)";

  private List<String> users() {
    return tdb.jdbc().query("select user_id from build_user order by user_id").stream()
        .map(r -> r.string("user_id"))
        .toList();
  }

  @Test
  void a_transaction_commits_when_its_work_returns_and_its_statements_are_bound_to_it() {
    String result =
        db.transaction(
            tx -> {
              tx.update(INSERT_USER, Params.of("u", "alice"));
              tx.update(INSERT_USER, Params.of("u", "bob"));
              assertThat(users()).as("invisible outside the transaction before commit").isEmpty();
              assertThat(tx.query("select count(*) as n from build_user").get(0).longValue("n"))
                  .isEqualTo(2);
              return "done";
            });
    assertThat(result).isEqualTo("done");
    assertThat(users()).containsExactly("alice", "bob");
    assertThat(fake.calls(Operation.BEGIN)).isEqualTo(1);
    assertThat(fake.calls(Operation.COMMIT)).isEqualTo(1);
    assertThat(fake.calls(Operation.ROLLBACK)).isZero();
  }

  @Test
  void a_transaction_rolls_back_when_its_work_throws_and_the_same_exception_surfaces() {
    IllegalStateException boom = new IllegalStateException("boom");
    assertThatThrownBy(
            () ->
                db.transaction(
                    tx -> {
                      tx.update(INSERT_USER, Params.of("u", "alice"));
                      throw boom;
                    }))
        .isSameAs(boom);
    assertThat(users()).isEmpty();
    assertThat(fake.calls(Operation.ROLLBACK)).isEqualTo(1);
    assertThat(fake.calls(Operation.COMMIT)).isZero();
  }

  @Test
  void a_sql_error_ends_the_transaction_and_nothing_of_it_commits() {
    Rows.user("taken").insert(tdb.jdbc());
    assertThatThrownBy(
            () ->
                db.transaction(
                    tx -> {
                      tx.update(INSERT_USER, Params.of("u", "alice"));
                      try {
                        tx.update(INSERT_USER, Params.of("u", "taken"));
                      } catch (UniqueViolationException expected) {
                        // carry on regardless, as careless code might
                      }
                      return tx.update(INSERT_USER, Params.of("u", "bob"));
                    }))
        .isExactlyInstanceOf(DatabaseException.class)
        .hasMessageContaining(
            "aborted by an earlier failed statement (insert into build_user (user_id) values (:u))");
    assertThat(users()).containsExactly("taken");
    assertThat(fake.calls(Operation.EXECUTE))
        .as("the statement after the error is not sent")
        .isEqualTo(2);
    assertThat(fake.calls(Operation.COMMIT)).isZero();
  }

  @Test
  void work_that_swallows_a_sql_error_and_returns_still_commits_nothing() {
    Rows.user("taken").insert(tdb.jdbc());
    assertThatThrownBy(
            () ->
                db.transaction(
                    tx -> {
                      tx.update(INSERT_USER, Params.of("u", "alice"));
                      try {
                        tx.update(INSERT_USER, Params.of("u", "taken"));
                      } catch (UniqueViolationException swallowed) {
                        return 0;
                      }
                      return 1;
                    }))
        .hasMessageContaining("nothing in it is committed");
    assertThat(users()).containsExactly("taken");
    assertThat(fake.calls(Operation.COMMIT)).isZero();
  }

  @Test
  void a_unique_violation_in_a_transaction_reaches_the_caller_as_such() {
    Rows.user("taken").insert(tdb.jdbc());
    assertThatThrownBy(() -> db.transaction(tx -> tx.update(INSERT_USER, Params.of("u", "taken"))))
        .isInstanceOf(UniqueViolationException.class);
  }

  @Test
  void a_nested_transaction_joins_the_outer_one() {
    db.transaction(
        tx -> tx.transaction(inner -> inner.update(INSERT_USER, Params.of("u", "alice"))));
    assertThatThrownBy(
            () ->
                db.transaction(
                    tx -> {
                      tx.update(INSERT_USER, Params.of("u", "bob"));
                      tx.transaction(inner -> inner.update(INSERT_USER, Params.of("u", "carol")));
                      throw new IllegalStateException("outer fails after the inner one returned");
                    }))
        .isInstanceOf(IllegalStateException.class);
    assertThat(users()).containsExactly("alice");
    assertThat(fake.calls(Operation.BEGIN)).isEqualTo(2);
    assertThat(fake.calls(Operation.COMMIT)).isEqualTo(1);
    assertThat(fake.calls(Operation.ROLLBACK)).isEqualTo(1);
  }

  @Test
  void a_commit_that_fails_is_reported_and_nothing_is_committed() {
    tdb.jdbc().update("create table deferred (k int unique deferrable initially deferred)");
    assertThatThrownBy(
            () ->
                db.transaction(
                    tx -> {
                      tx.update("insert into deferred (k) values (1)");
                      return tx.update("insert into deferred (k) values (1)");
                    }))
        .isInstanceOf(UniqueViolationException.class)
        .hasMessageContaining("(in statement starting: commit)");
    assertThat(tdb.jdbc().query("select k from deferred")).isEmpty();
  }
}
