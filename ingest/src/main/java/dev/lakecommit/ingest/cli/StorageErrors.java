package dev.lakecommit.ingest.cli;

import java.util.concurrent.atomic.AtomicReference;
import software.amazon.awssdk.core.exception.AbortedException;
import software.amazon.awssdk.core.exception.SdkServiceException;
import software.amazon.awssdk.core.interceptor.Context;
import software.amazon.awssdk.core.interceptor.ExecutionAttributes;
import software.amazon.awssdk.core.interceptor.ExecutionInterceptor;
import software.amazon.awssdk.http.SdkHttpRequest;

/**
 * Remembers the last failed request of any AWS SDK client in the tool (S3FileIO and S3A alike), so that a job
 * stalled while the storage client retries can name the endpoint and the error it got. Registered as a global
 * SDK interceptor ({@code software/amazon/awssdk/global/handlers/execution.interceptors}); it only observes.
 * Records method, endpoint and path — never headers or the query string, where credentials or signatures live.
 */
public final class StorageErrors implements ExecutionInterceptor {
  private static final AtomicReference<String> LAST = new AtomicReference<>();

  /** The last failed request, or null if none failed in this JVM. */
  public static String last() {
    return LAST.get();
  }

  @Override
  public void afterTransmission(Context.AfterTransmission context, ExecutionAttributes attributes) {
    int status = context.httpResponse().statusCode();
    // 404 and 412 answer existence and conditional checks; 3xx are followed by the client.
    if (status >= 500 || status == 403 || status == 429) {
      LAST.set("HTTP " + status + " " + context.httpResponse().statusText().orElse("") + " from "
          + describe(context.httpRequest()) + " (the storage client retries what it may)");
    }
  }

  @Override
  public void onExecutionFailure(Context.FailedExecution context, ExecutionAttributes attributes) {
    if (context.exception() instanceof SdkServiceException service
        && (service.statusCode() == 404 || service.statusCode() == 412)
        || context.exception() instanceof AbortedException) {
      return; // existence checks, and interrupts of the job's own
    }
    String request = context.httpRequest().map(StorageErrors::describe).orElse("a storage request");
    LAST.set(Redaction.redactText(context.exception().toString()) + " from " + request);
  }

  private static String describe(SdkHttpRequest request) {
    return request.method() + " " + request.protocol() + "://" + request.host() + ":" + request.port()
        + request.encodedPath();
  }
}
