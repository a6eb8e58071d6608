package buildqueue.aws.image;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import org.junit.jupiter.api.Test;

class DockerfilesTest {
  private static List<String> sources(String dockerfile) {
    return Dockerfiles.contextSources(dockerfile).stream().map(Dockerfiles.Source::path).toList();
  }

  @Test
  void copy_and_add_sources_are_read_with_their_options_skipped() {
    String text =
        """
        FROM debian AS build
        COPY --chown=10001:10001 --chmod=644 a.txt /x/
        copy --link b c /y/
        ADD --checksum=sha256:0123 d.tar.gz /z/
        COPY --from=build /out /out
        COPY --from=eclipse-temurin:21-jre /opt/java /opt/java
        ADD https://example.com/f.tgz /f
        ADD git@github.com:o/r.git /r
        ONBUILD COPY later /later
        """;
    assertThat(sources(text)).containsExactly("a.txt", "b", "c", "d.tar.gz");
  }

  @Test
  void the_json_form_continuations_and_comments_are_read_as_buildkit_reads_them() {
    String text =
        """
        FROM debian
        COPY ["with space/file.json", "other", "/dest/"]
        COPY --chown=1:1 [ "x.json" , "/d" ]
        COPY first \\
        # a comment inside the instruction is dropped
             second \\

             /dest/
        RUN echo done
        """;
    List<Dockerfiles.Source> s = Dockerfiles.contextSources(text);
    assertThat(s)
        .extracting(Dockerfiles.Source::path)
        .containsExactly("with space/file.json", "other", "x.json", "first", "second");
    assertThat(s.get(3).line()).isEqualTo(4);
    assertThat(Dockerfiles.instructions(text))
        .extracting(Dockerfiles.Instruction::keyword)
        .containsExactly("FROM", "COPY", "COPY", "COPY", "RUN");
  }

  @Test
  void an_escape_directive_changes_the_continuation_character() {
    String text = "# escape=`\nFROM windows\nCOPY a `\n  b C:\\\\dest\\\\\n";
    assertThat(sources(text)).containsExactly("a", "b");
  }

  @Test
  void here_documents_are_inline_and_their_bodies_are_not_instructions() {
    String text =
        """
        FROM debian
        COPY <<EOF /etc/conf
        COPY not-an-instruction /x
        EOF
        RUN <<-'SCRIPT' bash
        \tCOPY neither /y
        \tSCRIPT
        COPY real /z
        """;
    assertThat(sources(text)).containsExactly("real");
  }

  @Test
  void a_malformed_json_array_is_read_as_words_as_docker_does() {
    assertThat(Dockerfiles.jsonArray("[\"a\", \"b\"]")).containsExactly("a", "b");
    assertThat(Dockerfiles.jsonArray("[\"a\\u0041\\\"\"]")).containsExactly("aA\"");
    assertThat(Dockerfiles.jsonArray("[\"a\", b]")).isNull();
    assertThat(Dockerfiles.jsonArray("[\"a\"")).isNull();
    assertThat(sources("COPY [a] /d\n")).containsExactly("[a]");
  }

  @Test
  void the_repositorys_dockerfile_reads_the_jar_the_catalogue_and_the_programs() {
    String dockerfile =
        ImageContextCheck.read(buildqueue.aws.testing.SampleEvents.repoFile("infra/Dockerfile"));
    assertThat(sources(dockerfile))
        .containsExactly(
            "functions/aws/target/buildqueue-aws.jar", "infra/kinds/kinds.json", "infra/programs/");
  }
}
