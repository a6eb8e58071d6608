package buildqueue.bench;

import static buildqueue.bench.Figures.F7;
import static buildqueue.bench.Figures.stats;

import java.util.List;
import java.util.Map;

/**
 * Figure 7: a Lambda's cold start, by handler and by Data API client, and the shaded jar's size.
 */
record ColdStartFigure(BenchPostgres pg, BenchMain.Plan plan, Report report) {
  void run() throws Exception {
    ColdStart cold = new ColdStart(pg, plan.benchDir());
    Map<String, List<LambdaJvm.Start>> starts =
        cold.measure(
            plan.quick() ? 2 : 5, plan.recordPrimedClasses() ? cold.primedClassList() : null);
    List<ColdStart.ClientCase> clients = cold.clientCases();
    Double trivial = null;
    Double trivialFirstEvent = null;
    Double chosenClient = null;
    for (Map.Entry<String, List<LambdaJvm.Start>> e : starts.entrySet()) {
      Stats wall = stats(e.getValue(), LambdaJvm.Start::wallMs);
      if (e.getKey().contains(ColdStart.PRIMED)) {
        // What a restored snapshot still pays: the first event alone, after building and priming.
        Stats first = stats(e.getValue(), LambdaJvm.Start::handleMs);
        Stats warm = stats(e.getValue(), LambdaJvm.Start::warmMs);
        report.add(
            F7,
            e.getKey(),
            first,
            " ms",
            0,
            Report.format(first.median() / trivialFirstEvent, 1)
                + "× the trivial handler's first event ("
                + Report.format(trivialFirstEvent, 1)
                + " ms), "
                + Report.format(first.median() / trivial, 2)
                + "× its whole cold start; the same event again, warm: "
                + Report.format(warm.median(), 0)
                + " ms ("
                + Report.format(warm.median() / trivialFirstEvent, 1)
                + "× the trivial first event); built and primed in "
                + Report.format(stats(e.getValue(), LambdaJvm.Start::constructMs).median(), 0)
                + " ms before the snapshot");
        continue;
      }
      String split =
          "construct "
              + Report.format(stats(e.getValue(), LambdaJvm.Start::constructMs).median(), 0)
              + " ms + first event "
              + Report.format(stats(e.getValue(), LambdaJvm.Start::handleMs).median(), 0)
              + " ms; "
              + Report.format(stats(e.getValue(), LambdaJvm.Start::classes).median(), 0)
              + " classes loaded";
      ColdStart.ClientCase client =
          clients.stream().filter(c -> c.name().equals(e.getKey())).findFirst().orElse(null);
      if (client != null) {
        String what =
            "Data API client on the " + e.getKey() + ": JVM start → first statement answered";
        if (chosenClient == null) {
          chosenClient = wall.median();
          report.add(
              F7,
              what,
              wall,
              " ms",
              0,
              "client built + first call; "
                  + split.replace("construct", "build").replace("first event", "first call"));
        } else {
          report.add(
              F7,
              what,
              wall,
              " ms",
              0,
              Report.format(wall.median() / chosenClient, 2)
                  + "× the URL-connection client; its jars add "
                  + Report.format(megabytes(client.jars()), 1)
                  + " MiB; "
                  + split.replace("construct", "build").replace("first event", "first call"));
        }
        continue;
      }
      if (trivial == null) {
        trivial = wall.median();
        trivialFirstEvent = stats(e.getValue(), LambdaJvm.Start::handleMs).median();
        report.add(F7, e.getKey() + ": JVM start → first event handled", wall, " ms", 0, split);
      } else {
        report.add(
            F7,
            e.getKey() + ": JVM start → first event handled",
            wall,
            " ms",
            0,
            Report.format(wall.median() / trivial, 1) + "× the trivial handler; " + split);
      }
    }
    report.add(
        F7,
        "shaded jar size",
        Report.format(cold.jarBytes() / 1024.0 / 1024.0, 1) + " MiB",
        "—",
        "1",
        Report.format(cold.jarEntries(), 0)
            + " entries, "
            + Report.format(cold.jarClasses(), 0)
            + " classes");
    report.note(ColdStartNotes.NOTE.formatted(String.join(" ", LambdaJvm.LAMBDA_JVM_FLAGS)));
  }

  private static double megabytes(List<java.nio.file.Path> files) throws java.io.IOException {
    long bytes = 0;
    for (java.nio.file.Path f : files) {
      bytes += java.nio.file.Files.size(f);
    }
    return bytes / 1024.0 / 1024.0;
  }
}
