package buildqueue.bench;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * Figure 6 as a picture: billed worker-seconds per job-second against the median wait to start, one
 * point per trace and setting, as a standalone SVG (plain text, so it diffs and needs no plotting
 * library). The wait axis is logarithmic: the bursty trace waits minutes where the others wait
 * under one, and a linear axis would squash the trade-off within each trace into a corner. Colour
 * is the setting, shape the trace.
 */
final class CostPlot {
  /** One point: which trace and setting, and where. */
  record Point(String trace, String setting, double waitP50Seconds, double billedPerJobSecond) {}

  private static final int WIDTH = 880;
  private static final int HEIGHT = 460;
  private static final int LEFT = 70;
  private static final int RIGHT = 330;
  private static final int TOP = 40;
  private static final int BOTTOM = 60;
  private static final String[] COLOURS = {
    "#1b6ca8", "#d1495b", "#2e933c", "#edae49", "#6a4c93", "#00798c"
  };
  private static final double[] WAIT_TICKS = {10, 20, 30, 60, 120, 300, 600, 1200, 1800, 3600};

  private CostPlot() {}

  static String svg(String title, List<Point> points) {
    List<String> settings = distinct(points.stream().map(Point::setting).toList());
    List<String> traces = distinct(points.stream().map(Point::trace).toList());
    double xMin =
        Math.log10(points.stream().mapToDouble(Point::waitP50Seconds).min().orElse(10) / 1.5);
    double xMax =
        Math.log10(points.stream().mapToDouble(Point::waitP50Seconds).max().orElse(1000) * 1.3);
    double yMin =
        Math.min(1.0, points.stream().mapToDouble(Point::billedPerJobSecond).min().orElse(1.0));
    double yMax =
        Math.ceil(points.stream().mapToDouble(Point::billedPerJobSecond).max().orElse(2.0) * 10 + 1)
            / 10;
    double plotW = WIDTH - LEFT - RIGHT;
    double plotH = HEIGHT - TOP - BOTTOM;
    java.util.function.DoubleUnaryOperator x =
        w -> LEFT + (Math.log10(w) - xMin) / (xMax - xMin) * plotW;
    java.util.function.DoubleUnaryOperator y =
        b -> TOP + plotH - (b - yMin) / (yMax - yMin) * plotH;

    StringBuilder s = new StringBuilder();
    s.append(
        String.format(
            Locale.ROOT,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
                + "viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" font-size=\"12\">%n",
            WIDTH,
            HEIGHT,
            WIDTH,
            HEIGHT));
    s.append(
        String.format(
            Locale.ROOT, "<rect width=\"%d\" height=\"%d\" fill=\"white\"/>%n", WIDTH, HEIGHT));
    s.append(
        String.format(
            Locale.ROOT,
            "<text x=\"%d\" y=\"22\" font-size=\"14\" font-weight=\"bold\">%s</text>%n",
            LEFT,
            escape(title)));
    // Grid and axes.
    for (double w : WAIT_TICKS) {
      if (Math.log10(w) < xMin || Math.log10(w) > xMax) {
        continue;
      }
      double px = x.applyAsDouble(w);
      s.append(line(px, TOP, px, TOP + plotH, "#e0e0e0"));
      s.append(
          text(px, TOP + plotH + 16, "middle", w >= 60 ? fmt(w / 60) + " min" : fmt(w) + " s"));
    }
    for (double b = Math.ceil(yMin * 10) / 10; b <= yMax + 1e-9; b += 0.1) {
      double py = y.applyAsDouble(b);
      s.append(line(LEFT, py, LEFT + plotW, py, Math.abs(b - 1.0) < 1e-9 ? "#999999" : "#e0e0e0"));
      s.append(text(LEFT - 6, py + 4, "end", String.format(Locale.ROOT, "%.1f", b)));
    }
    s.append(line(LEFT, TOP, LEFT, TOP + plotH, "#333333"));
    s.append(line(LEFT, TOP + plotH, LEFT + plotW, TOP + plotH, "#333333"));
    s.append(
        text(
            LEFT + plotW / 2,
            HEIGHT - 18,
            "middle",
            "median wait to start (arrival → job start, model time, log scale)"));
    s.append(
        String.format(
            Locale.ROOT,
            "<text transform=\"translate(18 %.1f) rotate(-90)\" text-anchor=\"middle\">"
                + "billed worker-s per job-s (1.0 = only builds)</text>%n",
            TOP + plotH / 2));
    // Points.
    for (Point p : points) {
      String colour = COLOURS[settings.indexOf(p.setting()) % COLOURS.length];
      s.append(
          marker(
              traces.indexOf(p.trace()),
              x.applyAsDouble(p.waitP50Seconds()),
              y.applyAsDouble(p.billedPerJobSecond()),
              colour,
              p.trace()
                  + ", "
                  + p.setting()
                  + ": wait p50 "
                  + fmt(p.waitP50Seconds())
                  + " s, "
                  + String.format(Locale.ROOT, "%.2f", p.billedPerJobSecond())));
    }
    // Legend: settings by colour, traces by shape.
    double lx = LEFT + plotW + 20;
    double ly = TOP + 10;
    s.append(text(lx, ly, "start", "setting (colour)"));
    for (int i = 0; i < settings.size(); i++) {
      ly += 18;
      s.append(
          String.format(
              Locale.ROOT,
              "<rect x=\"%.1f\" y=\"%.1f\" width=\"10\" height=\"10\" fill=\"%s\"/>%n",
              lx,
              ly - 9,
              COLOURS[i % COLOURS.length]));
      s.append(text(lx + 16, ly, "start", settings.get(i)));
    }
    ly += 30;
    s.append(text(lx, ly, "start", "trace (shape)"));
    for (int i = 0; i < traces.size(); i++) {
      ly += 18;
      s.append(marker(i, lx + 5, ly - 4, "#555555", traces.get(i)));
      s.append(text(lx + 16, ly, "start", traces.get(i)));
    }
    s.append("</svg>\n");
    return s.toString();
  }

  private static String marker(int shape, double cx, double cy, String colour, String tooltip) {
    String title = "<title>" + escape(tooltip) + "</title>";
    return switch (shape % 3) {
      case 0 ->
          String.format(
              Locale.ROOT,
              "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"6\" fill=\"%s\" fill-opacity=\"0.85\">%s</circle>%n",
              cx,
              cy,
              colour,
              title);
      case 1 ->
          String.format(
              Locale.ROOT,
              "<rect x=\"%.1f\" y=\"%.1f\" width=\"11\" height=\"11\" fill=\"%s\" "
                  + "fill-opacity=\"0.85\">%s</rect>%n",
              cx - 5.5,
              cy - 5.5,
              colour,
              title);
      default ->
          String.format(
              Locale.ROOT,
              "<polygon points=\"%.1f,%.1f %.1f,%.1f %.1f,%.1f\" fill=\"%s\" "
                  + "fill-opacity=\"0.85\">%s</polygon>%n",
              cx,
              cy - 7,
              cx - 6.5,
              cy + 5,
              cx + 6.5,
              cy + 5,
              colour,
              title);
    };
  }

  private static String line(double x1, double y1, double x2, double y2, String colour) {
    return String.format(
        Locale.ROOT,
        "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\"/>%n",
        x1,
        y1,
        x2,
        y2,
        colour);
  }

  private static String text(double x, double y, String anchor, String text) {
    return String.format(
        Locale.ROOT,
        "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\">%s</text>%n",
        x,
        y,
        anchor,
        escape(text));
  }

  private static String fmt(double v) {
    return v == Math.rint(v) ? Long.toString((long) v) : String.format(Locale.ROOT, "%.1f", v);
  }

  private static String escape(String s) {
    return s.replace("&", "&amp;")
        .replace("<", "&lt;")
        .replace(">", "&gt;")
        .replace("\"", "&quot;");
  }

  private static List<String> distinct(List<String> values) {
    List<String> out = new ArrayList<>();
    values.forEach(
        v -> {
          if (!out.contains(v)) {
            out.add(v);
          }
        });
    return out;
  }
}
