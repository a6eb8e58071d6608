package buildqueue.db;

import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;

/**
 * Counts the statements and transactions sent through the port, so that tests can pin how many
 * round trips a job's life costs and benchmarks can report it.
 */
public final class CountingDatabase implements Database {
  private final Database delegate;
  private final AtomicLong statements;
  private final AtomicLong transactions;

  public CountingDatabase(Database delegate) {
    this(delegate, new AtomicLong(), new AtomicLong());
  }

  private CountingDatabase(Database delegate, AtomicLong statements, AtomicLong transactions) {
    this.delegate = delegate;
    this.statements = statements;
    this.transactions = transactions;
  }

  /**
   * Another database (the worker role's, say) counted together with this one, so that the round
   * trips of a job's whole life add up whichever connection each side uses.
   */
  public CountingDatabase alsoCounting(Database other) {
    return new CountingDatabase(other, statements, transactions);
  }

  public long statements() {
    return statements.get();
  }

  public long transactions() {
    return transactions.get();
  }

  public void reset() {
    statements.set(0);
    transactions.set(0);
  }

  @Override
  public List<Row> query(String sql, Params params) {
    statements.incrementAndGet();
    return delegate.query(sql, params);
  }

  @Override
  public int update(String sql, Params params) {
    statements.incrementAndGet();
    return delegate.update(sql, params);
  }

  @Override
  public <T> T transaction(Function<Database, T> work) {
    transactions.incrementAndGet();
    return delegate.transaction(
        tx -> work.apply(new CountingDatabase(tx, statements, new AtomicLong())));
  }
}
