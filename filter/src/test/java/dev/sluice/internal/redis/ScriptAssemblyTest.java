package dev.sluice.internal.redis;

import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.regex.Pattern;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The scripts Redis runs are assembled from one file per algorithm (its decision, then its sections
 * {@code #write} and {@code #give-back}) and the shared parts: every splice resolved, each section
 * once where it is named, no section marker left in, and each algorithm's code in the order decide.lua
 * reads it.
 */
class ScriptAssemblyTest {

    private static final List<String> SCRIPTS = List.of(RedisEngine.SCRIPT, RedisEngine.BATCH_SCRIPT);

    @Test
    void everySpliceIsResolvedAndNoSectionMarkerIsLeft() {
        Pattern splice = Pattern.compile("(?m)^[ \\t]*--\\[\\[ [a-z-]+\\.lua(#[a-z-]+)? ]]$");
        Pattern marker = Pattern.compile("(?m)^--\\[\\[ #[a-z-]+ ]]$");
        for (String script : SCRIPTS) {
            assertThat(splice.matcher(script).find()).as("a splice line left in").isFalse();
            assertThat(marker.matcher(script).find()).as("a section marker left in").isFalse();
        }
    }

    @Test
    void eachAlgorithmsSectionsAreSplicedOnceWhereTheyAreNamed() {
        for (String script : SCRIPTS) {
            // a line of each section, once: the give-backs in give-back.lua's branches, the writes in decide.lua's
            assertThat(count(script, "pcall('ZREM', key, string.sub(tokens, 8 * i - 7, 8 * i))"))
                    .as("concurrency's release").isEqualTo(1);
            assertThat(count(script, "members[j] = encode('>I6I2', taken_ms, count - removed - j)"))
                    .as("the log's give-back").isEqualTo(1);
            assertThat(count(script, "call('SETRANGE', key, '0', encode('<Bdd', 1, ends, count))"))
                    .as("the fixed window's give-back").isEqualTo(1);
            assertThat(count(script, "call('SETRANGE', key, '0', encode('<Bddd', 2, ends, current, previous))"))
                    .as("the counter's give-back").isEqualTo(1);
            assertThat(count(script, "call('SETRANGE', key, '0', encode('<Bi7I6I7I7', 4, units, stamp, scale, refunded))"))
                    .as("the token bucket's give-back").isEqualTo(1);
            assertThat(count(script, "call('ZADD', key, format('%d', taken_ms), state)")).as("concurrency's write").isEqualTo(1);
            assertThat(count(script, "args[2 * j] = encode('>I6I2', state, log_index + logged + j - 1)"))
                    .as("the log's write").isEqualTo(1);
            // the give-backs come before the decisions that read what they wrote
            assertThat(script.indexOf("encode('<Bi7I6I7I7', 4, units, stamp, scale, refunded)"))
                    .isLessThan(script.indexOf("token-bucket.lua: dev.sluice.internal.algorithm.TokenBucket"));
        }
    }

    @Test
    void aSectionRunsFromItsMarkerToTheNextWhateverTheLineEnds() {
        for (String end : List.of("\n", "\r\n")) {
            String text = String.join(end, "-- decide", "--[[ #write ]]", "-- write", "--[[ #give-back ]]", "-- give back", "");
            assertThat(RedisEngine.section("x.lua", text, null)).isEqualTo("-- decide" + end);
            assertThat(RedisEngine.section("x.lua", text, "write")).isEqualTo("-- write" + end);
            assertThat(RedisEngine.section("x.lua", text, "give-back")).isEqualTo("-- give back" + end);
            assertThatThrownBy(() -> RedisEngine.section("x.lua", text, "renew"))
                    .isInstanceOf(IllegalStateException.class).hasMessageContaining("x.lua has no section renew");
        }
    }

    private static int count(String script, String line) {
        int n = 0;
        for (int at = script.indexOf(line); at >= 0; at = script.indexOf(line, at + 1)) n++;
        return n;
    }
}
