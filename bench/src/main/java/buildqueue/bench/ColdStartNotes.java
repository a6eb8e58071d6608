package buildqueue.bench;

/** What figure 7 measures and what was done to the jar and the handlers for it. */
final class ColdStartNotes {
  private ColdStartNotes() {}

  static final String NOTE =
      """
      ### How the cold start is measured (figure 7)

      Each start is a fresh JVM (`java %s -cp buildqueue-aws.jar:launcher:aws-lambda-java-serialization.jar`) that
      plays the Lambda runtime: it constructs the handler, deserializes the event with the runtime's own event
      serializers, handles it once and prints a line; the time is from the process spawn to that line, so it
      includes JVM boot. The Data API, ECS, EventBridge and Secrets Manager are the aws module's wire-level fakes on localhost
      (reached through `AWS_ENDPOINT_URL_RDS_DATA`, `_ECS`, `_EVENTBRIDGE`, `_SECRETS_MANAGER`), the database is the benchmark's
      PostgreSQL, the CloudFormation response URL is a local HTTP server. Real AWS adds network round trips
      (tens of ms per Data API call) and the Lambda sandbox's own start; SnapStart (on in `template.yaml`)
      replaces most of what is measured here with a snapshot restore.

      What was done for size and start-up, as built: one HTTP client, the URL-connection client, with Apache
      and Netty excluded from every SDK client (no connection-pool or event-loop threads, nothing to re-create
      after a SnapStart restore); of `aws-lambda-java-events` only the two event families the handlers take
      are shaded in (the rest is about 1 MB); the runtime's serializer stays out of the jar (the runtime
      provides it); clients are built lazily on the first event (`Lazy`), never in static initialisers, so a
      SnapStart snapshot holds no credentials, tokens or connections.

      What it gained: the two "Data API client on the …" rows start a fresh JVM that builds one Data API client
      on each HTTP client and sends one statement to the fake. The URL-connection client saves the Apache
      client's jars in the shaded jar and a few hundred loaded classes; its first call is as fast or faster:
      level in some runs on this shared machine, up to 1.4× sooner in others. Lazy clients gain nothing
      on a plain cold start (the work moves from init to the
      first event); they are there for SnapStart's sake. What dominates every handler's first event is
      building the SDK clients and loading their classes (the client rows show one client alone costs
      hundreds of milliseconds in a fresh JVM); SnapStart, on in `template.yaml`, is what removes it.

      The "primed: first event after priming" rows start a fresh JVM, build the handler (and, for a typed
      handler, the runtime's event and answer serializers, which the runtime builds at init), run its SnapStart
      priming hooks (`Priming`: services and clients built, the recorded first-event classes loaded, the
      function's local code and its SDK calls rehearsed 25 times against a loopback server that answers as the
      services do) as the runtime does before a snapshot, and time the first event alone: what a restored
      snapshot still pays, beside the trivial handler's first event. It leaves out the restore itself, and a
      restored JVM's JIT state is the snapshot's, which this run approximates. Then the benchmark empties the
      queue again and the same event is handled a second time ("warm"): the event's own work, its round trips
      to the fakes and PostgreSQL, without anything new to the JVM. The fakes answer without Nagle's delay
      (the JDK's HTTP server otherwise adds 40 ms to each call, which no AWS endpoint does); real AWS adds its
      network instead (tens of ms per Data API call).

      What was done for it, as built: the API and the tick read their events from the stream with their own
      JSON mapper, primed with the rest, where the runtime's serializer ran its first binding and first answer
      cold on the first event (about 50 ms for the API, 25 ms for the tick); the rehearsal answers with a Data
      API row of every value kind, a started task, an accepted event and a secret, so reading them is primed
      too; each path runs 25 times, past the JIT's thresholds (a path run once stays interpreted in the
      snapshot); the schema function rehearses its worker secret's read and its answer's PUT on the JDK's HTTP
      client (hundreds of classes its first deploy after a restore paid for). Before, in one run: the API 727 ms,
      the tick 668, the stop handler 85, the schema function 398 (it failed before it was primed: the benchmark
      gave it no worker secret), against a trivial first event of 35 ms, with 40 ms of the fakes' Nagle delay in
      every call and the runtime's serializers built inside the first event.
      """;
}
