package buildqueue.bench;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/** The one Markdown table the benchmark prints, and the notes under it. */
final class Report {
  /** One line of the table. */
  record Line(
      String figure, String measure, String median, String spread, String runs, String note) {}

  private final List<Line> lines = new ArrayList<>();
  private final List<String> notes = new ArrayList<>();

  void add(String figure, String measure, Stats stats, String unit, int decimals, String note) {
    lines.add(
        new Line(
            figure,
            measure,
            format(stats.median(), decimals) + unit,
            format(stats.min(), decimals) + "–" + format(stats.max(), decimals) + unit,
            Integer.toString(stats.count()),
            note));
  }

  void add(String figure, String measure, String value, String spread, String runs, String note) {
    lines.add(new Line(figure, measure, value, spread, runs, note));
  }

  void note(String markdown) {
    notes.add(markdown);
  }

  List<Line> lines() {
    return lines;
  }

  String table() {
    StringBuilder b = new StringBuilder();
    b.append("| # | figure | measure | median | spread (min–max) | runs | note |\n");
    b.append("|---|---|---|---:|---:|---:|---|\n");
    for (Line l : lines) {
      b.append("| ")
          .append(cell(l.figure().substring(0, 1)))
          .append(" | ")
          .append(cell(l.figure().substring(2)))
          .append(" | ")
          .append(cell(l.measure()))
          .append(" | ")
          .append(cell(l.median()))
          .append(" | ")
          .append(cell(l.spread()))
          .append(" | ")
          .append(cell(l.runs()))
          .append(" | ")
          .append(cell(l.note()))
          .append(" |\n");
    }
    return b.toString();
  }

  String notes() {
    return String.join("\n\n", notes);
  }

  static String format(double v, int decimals) {
    if (Double.isNaN(v) || Double.isInfinite(v)) {
      return "n/a";
    }
    return String.format(Locale.ROOT, "%,." + decimals + "f", v);
  }

  private static String cell(String s) {
    return s == null ? "" : s.replace("|", "\\|").replace("\n", " ");
  }
}
