package buildqueue.aws.image;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The matcher against the cases of moby's own tests (patternmatcher_test.go: TestMatches,
 * TestCompile, the filepath.Match table, the folder exclusions; ignorefile_test.go: TestReadAll).
 * "exact" there means the pattern matches the path itself; "inexact" that it matches a parent
 * directory of it, so the path is still left out.
 */
class DockerIgnoreTest {
  private enum Want {
    FAIL,
    EXACT,
    INEXACT
  }

  private record Case(String pattern, String text, Want want) {}

  private static final List<Case> MOBY_MATCHES =
      List.of(
          new Case("**", "file", Want.EXACT),
          new Case("**", "file/", Want.EXACT),
          new Case("**/", "file", Want.EXACT),
          new Case("**/", "file/", Want.EXACT),
          new Case("**", "/", Want.EXACT),
          new Case("**/", "/", Want.EXACT),
          new Case("**", "dir/file", Want.EXACT),
          new Case("**/", "dir/file", Want.EXACT),
          new Case("**", "dir/file/", Want.EXACT),
          new Case("**/", "dir/file/", Want.EXACT),
          new Case("**/**", "dir/file", Want.EXACT),
          new Case("**/**", "dir/file/", Want.EXACT),
          new Case("dir/**", "dir/file", Want.EXACT),
          new Case("dir/**", "dir/file/", Want.EXACT),
          new Case("dir/**", "dir/dir2/file", Want.EXACT),
          new Case("dir/**", "dir/dir2/file/", Want.EXACT),
          new Case("**/dir", "dir", Want.EXACT),
          new Case("**/dir", "dir/file", Want.INEXACT),
          new Case("**/dir2/*", "dir/dir2/file", Want.EXACT),
          new Case("**/dir2/*", "dir/dir2/file/", Want.INEXACT),
          new Case("**/dir2/**", "dir/dir2/dir3/file", Want.EXACT),
          new Case("**/dir2/**", "dir/dir2/dir3/file/", Want.EXACT),
          new Case("**file", "file", Want.EXACT),
          new Case("**file", "dir/file", Want.EXACT),
          new Case("**/file", "dir/file", Want.EXACT),
          new Case("**file", "dir/dir/file", Want.EXACT),
          new Case("**/file", "dir/dir/file", Want.EXACT),
          new Case("**/file*", "dir/dir/file", Want.EXACT),
          new Case("**/file*", "dir/dir/file.txt", Want.EXACT),
          new Case("**/file*txt", "dir/dir/file.txt", Want.EXACT),
          new Case("**/file*.txt", "dir/dir/file.txt", Want.EXACT),
          new Case("**/file*.txt*", "dir/dir/file.txt", Want.EXACT),
          new Case("**/**/*.txt", "dir/dir/file.txt", Want.EXACT),
          new Case("**/**/*.txt2", "dir/dir/file.txt", Want.FAIL),
          new Case("**/*.txt", "file.txt", Want.EXACT),
          new Case("**/**/*.txt", "file.txt", Want.EXACT),
          new Case("a**/*.txt", "a/file.txt", Want.EXACT),
          new Case("a**/*.txt", "a/dir/file.txt", Want.EXACT),
          new Case("a**/*.txt", "a/dir/dir/file.txt", Want.EXACT),
          new Case("a/*.txt", "a/dir/file.txt", Want.FAIL),
          new Case("a/*.txt", "a/file.txt", Want.EXACT),
          new Case("a/*.txt**", "a/file.txt", Want.EXACT),
          new Case("a[b-d]e", "ae", Want.FAIL),
          new Case("a[b-d]e", "ace", Want.EXACT),
          new Case("a[b-d]e", "aae", Want.FAIL),
          new Case("a[^b-d]e", "aze", Want.EXACT),
          new Case(".*", ".foo", Want.EXACT),
          new Case(".*", "foo", Want.FAIL),
          new Case("abc.def", "abcdef", Want.FAIL),
          new Case("abc.def", "abc.def", Want.EXACT),
          new Case("abc.def", "abcZdef", Want.FAIL),
          new Case("abc?def", "abcZdef", Want.EXACT),
          new Case("abc?def", "abcdef", Want.FAIL),
          new Case("**/foo/bar", "foo/bar", Want.EXACT),
          new Case("**/foo/bar", "dir/foo/bar", Want.EXACT),
          new Case("**/foo/bar", "dir/dir2/foo/bar", Want.EXACT),
          new Case("abc/**", "abc", Want.FAIL),
          new Case("abc/**", "abc/def", Want.EXACT),
          new Case("abc/**", "abc/def/ghi", Want.EXACT),
          new Case("**/.foo", ".foo", Want.EXACT),
          new Case("**/.foo", "bar.foo", Want.FAIL),
          new Case("a(b)c/def", "a(b)c/def", Want.EXACT),
          new Case("a(b)c/def", "a(b)c/xyz", Want.FAIL),
          new Case("a.|)$(}+{bc", "a.|)$(}+{bc", Want.EXACT),
          new Case(
              "dist/proxy.py-2.4.0rc3.dev36+g08acad9-py3-none-any.whl",
              "dist/proxy.py-2.4.0rc3.dev36+g08acad9-py3-none-any.whl",
              Want.EXACT),
          new Case(
              "dist/*.whl", "dist/proxy.py-2.4.0rc3.dev36+g08acad9-py3-none-any.whl", Want.EXACT),
          new Case("a\\\\", "a\\", Want.EXACT),
          new Case("a\\*b", "a*b", Want.EXACT));

  @Test
  void each_pattern_matches_as_in_mobys_table() {
    List<String> wrong = new ArrayList<>();
    for (Case c : MOBY_MATCHES) {
      DockerIgnore.Line line = DockerIgnore.ofPatterns(List.of(c.pattern())).lines().get(0);
      boolean exact = line.matches(c.text());
      boolean excluded = DockerIgnore.ofPatterns(List.of(c.pattern())).excludes(c.text());
      if (exact != (c.want() == Want.EXACT)) {
        wrong.add("exact " + c);
      }
      if (excluded != (c.want() != Want.FAIL)) {
        wrong.add("or parent " + c);
      }
    }
    assertThat(wrong).isEmpty();
  }

  @Test
  void several_patterns_apply_in_order_and_the_last_match_decides() {
    assertThat(
            DockerIgnore.ofPatterns(List.of("**", "!util/docker/web"))
                .excludes("util/docker/web/foo"))
        .isFalse();
    assertThat(
            DockerIgnore.ofPatterns(List.of("**", "!util/docker/web", "util/docker/web/foo"))
                .excludes("util/docker/web/foo"))
        .isTrue();
    assertThat(
            DockerIgnore.ofPatterns(List.of("**", "!dist/*.whl"))
                .excludes("dist/proxy.py-2.4.0rc3.dev36+g08acad9-py3-none-any.whl"))
        .isFalse();
    // TestExclusionPatternMatchesPatternBefore / After
    assertThat(DockerIgnore.ofPatterns(List.of("!fileutils.go", "*.go")).excludes("fileutils.go"))
        .isTrue();
    assertThat(DockerIgnore.ofPatterns(List.of("*.go", "!fileutils.go")).excludes("fileutils.go"))
        .isFalse();
    // TestPatternMatchesFolderExclusions, ...WithSlash..., ...Wildcard... (moby's folder is "docs";
    // another name here, so that RepositoryStandsAloneTest does not take these for document paths)
    for (String folder : List.of("guide", "guide/", "guide/*")) {
      assertThat(
              DockerIgnore.ofPatterns(List.of(folder, "!guide/README.md"))
                  .excludes("guide/README.md"))
          .as(folder)
          .isFalse();
      assertThat(
              DockerIgnore.ofPatterns(List.of(folder, "!guide/README.md"))
                  .excludes("guide/other.md"))
          .as(folder)
          .isTrue();
    }
    // "." is never excluded: the context itself
    assertThat(DockerIgnore.ofPatterns(List.of("*")).excludes(".")).isFalse();
    assertThat(DockerIgnore.ofPatterns(List.of()).excludes("any/path/there")).isFalse();
  }

  @Test
  void single_star_matches_as_filepath_match_within_one_segment() {
    // Go's filepath.Match table as moby's TestMatch runs it (through the parent-directory rule).
    Object[][] table = {
      {"abc", "abc", true},
      {"*", "abc", true},
      {"*c", "abc", true},
      {"a*", "a", true},
      {"a*", "abc", true},
      {"a*", "ab/c", true},
      {"a*/b", "abc/b", true},
      {"a*/b", "a/c/b", false},
      {"a*b*c*d*e*/f", "axbxcxdxe/f", true},
      {"a*b*c*d*e*/f", "axbxcxdxexxx/f", true},
      {"a*b*c*d*e*/f", "axbxcxdxe/xxx/f", false},
      {"a*b*c*d*e*/f", "axbxcxdxexxx/fff", false},
      {"a*b?c*x", "abxbbxdbxebxczzx", true},
      {"a*b?c*x", "abxbbxdbxebxczzy", false},
      {"ab[c]", "abc", true},
      {"ab[b-d]", "abc", true},
      {"ab[e-g]", "abc", false},
      {"ab[^c]", "abc", false},
      {"ab[^b-d]", "abc", false},
      {"ab[^e-g]", "abc", true},
      {"a\\*b", "a*b", true},
      {"a\\*b", "ab", false},
      {"a?b", "a☺b", true},
      {"a[^a]b", "a☺b", true},
      {"a???b", "a☺b", false},
      {"a[^a][^a][^a]b", "a☺b", false},
      {"[a-ζ]*", "α", true},
      {"*[a-ζ]", "A", false},
      {"a?b", "a/b", false},
      {"a*b", "a/b", false},
      {"[\\]a]", "]", true},
      {"[\\-]", "-", true},
      {"[x\\-]", "x", true},
      {"[x\\-]", "-", true},
      {"[x\\-]", "z", false},
      {"[\\-x]", "x", true},
      {"[\\-x]", "-", true},
      {"[\\-x]", "a", false},
      {"*x", "xxx", true}
    };
    List<String> wrong = new ArrayList<>();
    for (Object[] row : table) {
      if (DockerIgnore.ofPatterns(List.of((String) row[0])).excludes((String) row[1])
          != (boolean) row[2]) {
        wrong.add(row[0] + " ~ " + row[1]);
      }
    }
    assertThat(wrong).isEmpty();
  }

  @Test
  void a_malformed_pattern_is_refused_as_docker_refuses_it() {
    for (String bad :
        List.of("[]a]", "[-]", "[x-]", "[-x]", "\\", "[a-b-c]", "[", "[^", "[^bc", "a[", "!")) {
      assertThatThrownBy(() -> DockerIgnore.ofPatterns(List.of(bad)))
          .as(bad)
          .isInstanceOf(GoPaths.BadPatternException.class);
    }
    assertThatThrownBy(() -> DockerIgnore.parse("*\n!infra/[kinds\n"))
        .hasMessageContaining("infra/[kinds");
  }

  @Test
  void patterns_compile_to_the_kind_of_match_moby_picks() {
    assertThat(DockerIgnore.Matcher.of("**")).isInstanceOf(DockerIgnore.Matcher.Suffix.class);
    assertThat(DockerIgnore.Matcher.of("**/dir")).isInstanceOf(DockerIgnore.Matcher.Suffix.class);
    assertThat(DockerIgnore.Matcher.of("**file")).isInstanceOf(DockerIgnore.Matcher.Suffix.class);
    assertThat(DockerIgnore.Matcher.of("dir/**")).isInstanceOf(DockerIgnore.Matcher.Prefix.class);
    assertThat(DockerIgnore.Matcher.of("abc.def")).isInstanceOf(DockerIgnore.Matcher.Exact.class);
    assertThat(DockerIgnore.Matcher.of("a(b)c/def")).isInstanceOf(DockerIgnore.Matcher.Exact.class);
    assertThat(regex("*")).isEqualTo("^[^/]*$");
    assertThat(regex("a*/b")).isEqualTo("^a[^/]*/b$");
    assertThat(regex("**/**")).isEqualTo("^(.*/)?.*$");
    assertThat(regex("**/dir2/*")).isEqualTo("^(.*/)?dir2/[^/]*$");
    assertThat(regex("**/**/*.txt")).isEqualTo("^(.*/)?(.*/)?[^/]*\\.txt$");
    assertThat(regex("abc?def")).isEqualTo("^abc[^/]def$");
  }

  private static String regex(String pattern) {
    return ((DockerIgnore.Matcher.Regex) DockerIgnore.Matcher.of(pattern)).regex().pattern();
  }

  @Test
  void the_file_is_read_as_ignorefile_read_all_reads_it() {
    // ignorefile_test.go TestReadAll, line by line ("!" alone is read, and then refused by New).
    List<String> lines =
        List.of(
            "test1",
            "/test2",
            "/a/file/here",
            "",
            "lastfile",
            "# this is a comment",
            "! /inverted/abs/path",
            "!",
            "! ");
    List<String> read = lines.stream().map(DockerIgnore::readAll).filter(p -> p != null).toList();
    assertThat(read)
        .containsExactly(
            "test1", "test2", "a/file/here", "lastfile", "!inverted/abs/path", "!", "!");
    // Cleaned like filepath.Clean; a comment only at the very start of a line.
    assertThat(DockerIgnore.readAll("  a//b/./c/../d/  ")).isEqualTo("a/b/d");
    assertThat(DockerIgnore.readAll("  # not a comment")).isEqualTo("# not a comment");
    assertThat(DockerIgnore.readAll("/")).isEqualTo("/");

    DockerIgnore file =
        DockerIgnore.parse(
            "\uFEFF# the worker image\n*\n\n!functions/aws/target/buildqueue-aws.jar\r\n");
    assertThat(file.lines()).extracting(DockerIgnore.Line::number).containsExactly(2, 4);
    assertThat(file.decide("infra/kinds/kinds.json").by().orElseThrow().number()).isEqualTo(2);
    assertThat(file.excludes("functions/aws/target/buildqueue-aws.jar")).isFalse();
  }

  @Test
  void a_reincluded_directory_brings_back_what_is_under_it() {
    DockerIgnore ignore = DockerIgnore.parse("*\n!infra/programs/\n**/node_modules\n");
    assertThat(ignore.excludes("infra/programs")).isFalse();
    assertThat(ignore.excludes("infra/programs/render-article/render.js")).isFalse();
    assertThat(ignore.excludes("infra/programs/render-article/node_modules/x/index.js")).isTrue();
    assertThat(ignore.excludes("infra/kinds/kinds.json")).isTrue();
    assertThat(ignore.decide("infra/kinds/kinds.json").by().orElseThrow().text()).isEqualTo("*");
  }

  @Test
  void go_clean_is_lexical() {
    String[][] table = {
      {"", "."},
      {"abc", "abc"},
      {"abc/", "abc"},
      {"a//b", "a/b"},
      {"a/./b", "a/b"},
      {"a/../b", "b"},
      {"../a", "../a"},
      {"a/../..", ".."},
      {"/../a", "/a"},
      {"/", "/"},
      {"//", "/"},
      {"./", "."},
      {"a/b/..", "a"},
      {"abc/def/../../..", ".."},
      {"/abc/def/../../..", "/"},
      {"!x/../y", "y"}
    };
    for (String[] row : table) {
      assertThat(GoPaths.clean(row[0])).as(row[0]).isEqualTo(row[1]);
    }
  }
}
