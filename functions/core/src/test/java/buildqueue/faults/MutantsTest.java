package buildqueue.faults;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

/**
 * The mutants of {@link Mutants} still apply to the core as it is: each replaces text that occurs
 * exactly once. When the core changes under one, this fails on the next build instead of the mutant
 * run quietly testing nothing ({@code scripts/mutants.sh} runs them).
 */
class MutantsTest {

  @Test
  void every_mutant_still_finds_its_text_exactly_once_in_the_core() throws IOException {
    for (Mutants.Mutant m : Mutants.ALL) {
      String source = Files.readString(Path.of(m.file()));

      String mutated = m.applyTo(source);

      assertThat(mutated).as(m.name()).isNotEqualTo(source).contains(m.to());
    }
  }

  @Test
  void a_mutant_whose_text_is_gone_fails_loudly() {
    Mutants.Mutant m = Mutants.ALL.get(0);

    assertThatThrownBy(() -> m.applyTo("class Nothing {}"))
        .hasMessageContaining(m.name())
        .hasMessageContaining("occurs nowhere");
    assertThatThrownBy(() -> m.applyTo(m.from() + m.from())).hasMessageContaining("more than once");
  }
}
