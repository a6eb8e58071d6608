package buildqueue.local;

import static org.assertj.core.api.Assertions.assertThat;

import buildqueue.testing.PostgresExtension;
import buildqueue.testing.TestDatabase;
import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.openqa.selenium.By;
import org.openqa.selenium.JavascriptExecutor;
import org.openqa.selenium.StaleElementReferenceException;
import org.openqa.selenium.WebDriver;
import org.openqa.selenium.WebElement;
import org.openqa.selenium.chrome.ChromeDriver;
import org.openqa.selenium.chrome.ChromeDriverService;
import org.openqa.selenium.chrome.ChromeOptions;
import org.openqa.selenium.support.ui.WebDriverWait;

/**
 * The dashboard in headless Chromium against a live local server with a worker process running a
 * job. Uses Debian's chromium and chromedriver (.ci/run installs them); without them the test is
 * skipped on a developer's machine and fails in CI.
 */
@ExtendWith(PostgresExtension.class)
class DashboardBrowserTest {
  private static final Path CHROMIUM = Path.of("/usr/bin/chromium");
  private static final Path CHROMEDRIVER = Path.of("/usr/bin/chromedriver");

  @TempDir Path dataDir;
  @TempDir Path browserProfile;

  private WebDriver browser() {
    boolean present = Files.isExecutable(CHROMIUM) && Files.isExecutable(CHROMEDRIVER);
    if (!present && "true".equals(System.getenv("CI"))) {
      throw new AssertionError(
          "CI must have " + CHROMIUM + " and " + CHROMEDRIVER + "; .ci/run installs them");
    }
    Assumptions.assumeTrue(
        present,
        "needs Debian's chromium and chromium-driver (apt-get install chromium chromium-driver)");
    ChromeOptions options = new ChromeOptions();
    options.setBinary(CHROMIUM.toFile());
    options.addArguments(
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-dev-shm-usage",
        "--window-size=1280,900",
        "--user-data-dir=" + browserProfile);
    ChromeDriverService service =
        new ChromeDriverService.Builder()
            .usingDriverExecutable(new File(CHROMEDRIVER.toString()))
            .usingAnyFreePort()
            .build();
    return new ChromeDriver(service, options);
  }

  @Test
  void the_dashboard_shows_a_running_jobs_progress_in_its_lanes_slot_and_its_output(
      TestDatabase db) {
    try (TestServer server = TestServer.start(db, dataDir)) {
      // 400 steps of 150 ms (a minute): the job must still run when a browser started on a loaded
      // machine shows the page (60 steps, 9 s, ended first under a parallel build's load).
      long job = server.submitDemo("bob", 400, 150);
      server.awaitProgress(job, 1);
      WebDriver browser = browser();
      try {
        browser.get(server.runtime.baseUri().toString());
        WebDriverWait wait = new WebDriverWait(browser, Duration.ofSeconds(30));
        // The dashboard replaces a part of the page whenever its data changed, and a running
        // job's progress changes every poll: an element found before a render is stale after it.
        // So the test reads by selector in one script, and its waits retry a stale element.
        wait.ignoring(StaleElementReferenceException.class);
        WebElement input = wait.until(d -> visible(d, By.id("token-input")));
        input.sendKeys(server.runtime.tokens().mint("operator", true, Duration.ofMinutes(10)));
        browser.findElement(By.id("token-save")).click();

        String slot = ".lane[data-lane='shared'] .slot[data-slot='shared#1']";
        wait.until(d -> visible(d, By.cssSelector(slot)));
        assertThat(attribute(browser, slot, "data-state")).isEqualTo("held");
        String progress = slot + " .job[data-job-id='" + job + "'] progress.progress";
        wait.until(d -> visible(d, By.cssSelector(progress)));
        assertThat(attribute(browser, progress, "data-steps")).isEqualTo("400");
        int first = Integer.parseInt(attribute(browser, progress, "data-progress"));
        assertThat(first).isPositive();
        // Live: a later poll shows the worker further on.
        wait.until(d -> Integer.parseInt(attribute(d, progress, "data-progress")) > first);
        String worker = slot + " .worker";
        assertThat(attribute(browser, worker, "data-status")).isEqualTo("running");
        String pid =
            Long.toString(
                LocalTaskId.parse(server.workerOf(job).string("task_id")).orElseThrow().pid());
        assertThat(text(browser, worker + " .worker-task")).contains(pid);
        String row = "#jobs tr.job-row[data-job-id='" + job + "']";
        assertThat(attribute(browser, row, "data-status")).isEqualTo("running");

        // The job's output, live, in its history: the worker saves the tail every 2 s.
        wait.until(
            d -> {
              d.findElement(By.cssSelector(row)).click();
              return true;
            });
        WebElement log = wait.until(d -> visible(d, By.id("history-log")));
        wait.until(d -> log.getText().startsWith("step 1 of 400 done"));
        int lines = log.getText().split("\n").length;
        wait.until(d -> log.getText().split("\n").length > lines);
      } finally {
        browser.quit();
      }
    }
  }

  private static String attribute(WebDriver d, String css, String name) {
    return read(d, css, "e.getAttribute(arguments[1])", name);
  }

  private static String text(WebDriver d, String css) {
    return read(d, css, "e.textContent");
  }

  /** Finds the element and reads it in one script, so that no render comes between the two. */
  private static String read(WebDriver d, String css, String expression, Object... more) {
    Object[] arguments = new Object[more.length + 1];
    arguments[0] = css;
    System.arraycopy(more, 0, arguments, 1, more.length);
    return (String)
        ((JavascriptExecutor) d)
            .executeScript(
                "var e = document.querySelector(arguments[0]);"
                    + " if (!e) throw new Error('nothing matches ' + arguments[0]);"
                    + " return "
                    + expression
                    + ";",
                arguments);
  }

  private static WebElement visible(WebDriver d, By by) {
    return d.findElements(by).stream().filter(WebElement::isDisplayed).findFirst().orElse(null);
  }
}
