package buildqueue.api;

/**
 * The {@link HttpApi} as the route tests call it: every response is held to {@code openapi.json}
 * ({@link OpenApiContract}) before the test sees it, so a route that answers something the contract
 * does not describe fails whichever test reached it.
 */
public final class CheckedApi {
  private final HttpApi api;
  private final OpenApiContract contract;

  public CheckedApi(HttpApi api) {
    this(api, OpenApiContract.shipped());
  }

  CheckedApi(HttpApi api, OpenApiContract contract) {
    this.api = api;
    this.contract = contract;
  }

  public ApiResponse handle(ApiRequest request) {
    ApiResponse response = api.handle(request);
    contract.check(request, response);
    return response;
  }

  public HttpApi unchecked() {
    return api;
  }
}
