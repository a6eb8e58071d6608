package buildqueue.aws.db;

import buildqueue.db.DatabaseException;
import buildqueue.db.UniqueViolationException;
import java.util.List;
import java.util.function.Supplier;
import software.amazon.awssdk.awscore.exception.AwsServiceException;
import software.amazon.awssdk.core.exception.SdkClientException;
import software.amazon.awssdk.core.exception.SdkException;
import software.amazon.awssdk.services.rdsdata.RdsDataClient;
import software.amazon.awssdk.services.rdsdata.model.DatabaseErrorException;
import software.amazon.awssdk.services.rdsdata.model.DatabaseResumingException;
import software.amazon.awssdk.services.rdsdata.model.ExecuteStatementResponse;
import software.amazon.awssdk.services.rdsdata.model.NotFoundException;
import software.amazon.awssdk.services.rdsdata.model.SqlParameter;
import software.amazon.awssdk.services.rdsdata.model.StatementTimeoutException;
import software.amazon.awssdk.services.rdsdata.model.TransactionNotFoundException;

/** The four Data API calls the adapter makes, with the resume retry and error translation. */
final class DataApiCalls {
  private static final String UNIQUE_VIOLATION = "23505";

  private final RdsDataClient client;
  private final DataApiSettings settings;
  private final ResumeRetry retry;
  private final boolean continueAfterTimeout;

  DataApiCalls(RdsDataClient client, DataApiSettings settings, ResumeRetry retry) {
    this(client, settings, retry, false);
  }

  private DataApiCalls(
      RdsDataClient client,
      DataApiSettings settings,
      ResumeRetry retry,
      boolean continueAfterTimeout) {
    this.client = client;
    this.settings = settings;
    this.retry = retry;
    this.continueAfterTimeout = continueAfterTimeout;
  }

  /** The same calls, each statement sent with {@code continueAfterTimeout}. */
  DataApiCalls continuingAfterTimeout() {
    return new DataApiCalls(client, settings, retry, true);
  }

  ExecuteStatementResponse execute(
      String sql, List<SqlParameter> parameters, String transactionId, boolean withMetadata) {
    String statement = firstLine(sql);
    return call(
        "statement " + statement,
        statement,
        () ->
            client.executeStatement(
                r ->
                    r.resourceArn(settings.resourceArn())
                        .secretArn(settings.secretArn())
                        .database(settings.database())
                        .sql(sql)
                        .parameters(parameters)
                        .transactionId(transactionId)
                        .continueAfterTimeout(continueAfterTimeout ? Boolean.TRUE : null)
                        .includeResultMetadata(withMetadata)));
  }

  String begin() {
    return call(
            "BeginTransaction",
            "begin",
            () ->
                client.beginTransaction(
                    r ->
                        r.resourceArn(settings.resourceArn())
                            .secretArn(settings.secretArn())
                            .database(settings.database())))
        .transactionId();
  }

  void commit(String transactionId) {
    call(
        "CommitTransaction",
        "commit",
        () ->
            client.commitTransaction(
                r ->
                    r.resourceArn(settings.resourceArn())
                        .secretArn(settings.secretArn())
                        .transactionId(transactionId)));
  }

  /**
   * Ends a transaction whose work failed. A transaction the Data API already dropped (any SQL error
   * does that) answers "not found", which is the outcome we want; other failures are attached to
   * the original error, which is the one worth reporting.
   */
  void rollbackQuietly(String transactionId, Throwable cause) {
    try {
      call(
          "RollbackTransaction",
          "rollback",
          () ->
              client.rollbackTransaction(
                  r ->
                      r.resourceArn(settings.resourceArn())
                          .secretArn(settings.secretArn())
                          .transactionId(transactionId)));
    } catch (DatabaseException e) {
      if (!(e.getCause() instanceof TransactionNotFoundException
          || e.getCause() instanceof NotFoundException)) {
        cause.addSuppressed(e);
      }
    }
  }

  private <T> T call(String what, String statement, Supplier<T> call) {
    try {
      return retry.call(what, call);
    } catch (SdkException e) {
      if (continueAfterTimeout && e instanceof StatementTimeoutException) {
        throw new DatabaseException(
            "the statement ran past the Data API's 45 s limit; it was sent with continueAfterTimeout, so it runs on"
                + " in the database, but this call cannot learn its outcome (in statement starting: "
                + statement
                + ")",
            e);
      }
      throw translate(e, statement);
    }
  }

  static DatabaseException translate(SdkException e, String statement) {
    String where = " (in statement starting: " + statement + ")";
    if (e instanceof DatabaseErrorException sqlError) {
      String message = serviceMessage(sqlError);
      if (message.contains("duplicate key") || message.contains(UNIQUE_VIOLATION)) {
        return new UniqueViolationException(message + where, e);
      }
      return new DatabaseException(message + where, e);
    }
    if (e instanceof TransactionNotFoundException || e instanceof NotFoundException) {
      return new DatabaseException(
          "the Data API no longer knows the transaction: it idled for 3 minutes, was aborted by an earlier error, "
              + "or has already ended; nothing more of it will commit"
              + where,
          e);
    }
    if (e instanceof StatementTimeoutException) {
      return new DatabaseException(
          "the statement ran past the Data API's 45 s limit and was cancelled" + where, e);
    }
    if (e instanceof DatabaseResumingException) {
      return new DatabaseException(
          "the Aurora cluster is resuming from auto-pause; nothing was run" + where, e);
    }
    if (e instanceof AwsServiceException service) {
      return new DatabaseException(
          "the Data API refused the call with "
              + service.awsErrorDetails().errorCode()
              + " (HTTP "
              + service.statusCode()
              + "): "
              + serviceMessage(service)
              + where,
          e);
    }
    if (e instanceof SdkClientException) {
      return new DatabaseException(
          "no answer from the Data API ("
              + e.getMessage()
              + "); the statement may or may not have been applied, so it is not retried"
              + where,
          e);
    }
    return new DatabaseException("the Data API call failed: " + e.getMessage() + where, e);
  }

  private static String serviceMessage(AwsServiceException e) {
    String m = e.awsErrorDetails() == null ? null : e.awsErrorDetails().errorMessage();
    return m == null ? String.valueOf(e.getMessage()) : m;
  }

  static String firstLine(String sql) {
    return sql.strip().lines().findFirst().orElse("").strip();
  }
}
