package dev.sluice.internal.redis;

import dev.sluice.limiter.Algorithm;
import dev.sluice.limiter.Rule;
import dev.sluice.limiter.RuleDecision;
import dev.sluice.testing.TestRedis;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import redis.clients.jedis.JedisPooled;

import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.ZoneId;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The request as decide.lua reads it: what {@link RequestCodec} writes, read back in Redis with the
 * script's own formats in its own order (decide.lua, fixed-window.lua, concurrency.lua), field by field.
 */
class RequestCodecTest {

    /**
     * decide.lua's reading of ARGV[1], field for field: the time with the first rule, then each rule,
     * what follows it (a settlement's take, a calendar's windows, a slot's token); and ARGV[2]'s tokens.
     * Answers the fields as text, one line per rule.
     */
    private static final String READ = """
            local decode = struct.unpack
            local request, tokens = ARGV[1], ARGV[2]
            local now, algorithm, mode, limit, window, burst, max_delay, cost, pos = decode('<dBBddddd', request)
            local out = { string.format('now %d', now) }
            for i = 1, tonumber(ARGV[3]) do
              if i > 1 then
                algorithm, mode, limit, window, burst, max_delay, cost, pos = decode('<BBddddd', request, pos)
              end
              local line = string.format('%d %d %d %d %d %d %d', algorithm, mode, limit, window, burst, max_delay, cost)
              if mode >= 3 then
                local ms, fraction, given
                ms, fraction, given, pos = decode('<ddd', request, pos)
                line = line .. string.format(' take %d %d %d token %s', ms, fraction, given,
                    string.format('%q', string.sub(tokens, 8 * i - 7, 8 * i)))
              end
              if algorithm == 0 then
                local around, b0, b1, b2, b3
                around, b0, b1, b2, b3, pos = decode('<ddddd', request, pos)
                line = line .. string.format(' calendar %d %d %d %d %d', around, b0, b1, b2, b3)
              end
              if algorithm == 7 and mode < 3 then
                local slot
                slot, pos = decode('c8', request, pos)
                line = line .. ' slot ' .. string.format('%q', slot)
              end
              out[#out + 1] = line
            end
            if pos ~= #request + 1 then
              return redis.error_reply('read ' .. (pos - 1) .. ' of ' .. #request .. ' bytes')
            end
            return table.concat(out, '\\n')
            """;

    private static JedisPooled jedis;

    @BeforeAll
    static void connect() {
        jedis = new JedisPooled(URI.create(TestRedis.url()));
    }

    @AfterAll
    static void close() {
        jedis.close();
    }

    private static String read(byte[] request, byte[] tokens, int rules) {
        List<byte[]> args = tokens == null
                ? List.of(request, new byte[0], Integer.toString(rules).getBytes(StandardCharsets.US_ASCII))
                : List.of(request, tokens, Integer.toString(rules).getBytes(StandardCharsets.US_ASCII));
        return new String((byte[]) jedis.eval(READ.getBytes(StandardCharsets.UTF_8), List.of(), args), StandardCharsets.ISO_8859_1);
    }

    /** The 8 bytes of a long, little-endian, as Lua's %q shows them. */
    private static String bytes(long token) {
        byte[] b = new byte[8];
        for (int i = 0; i < 8; i++) b[i] = (byte) (token >>> (8 * i));
        byte[] quoted = (byte[]) jedis.eval("return string.format('%q', ARGV[1])".getBytes(StandardCharsets.UTF_8), List.of(),
                List.of(b));
        return new String(quoted, StandardCharsets.ISO_8859_1);
    }

    @Test
    void aRequestOfOneRuleAloneOnRedisClockIsItsRuleAfterTheTimeToRead() {
        Rule api = new Rule("api", Algorithm.TOKEN_BUCKET, 100, Duration.ofMinutes(1), 150, 2,
                dev.sluice.limiter.FailurePolicy.OPEN, 100, Duration.ZERO);
        byte[] request = RequestCodec.aloneOnRedisClock(RequestCodec.rule(api));
        assertThat(read(request, null, 1)).isEqualTo("now -1\n4 0 100 60000 150 0 2");
    }

    @Test
    void everyPartOfEveryKindOfRuleIsReadWhereItWasWritten() {
        Rule bucket = Rule.builder("bucket").algorithm(Algorithm.LEAKY_BUCKET).limit(10).window(Duration.ofSeconds(1))
                .maxDelay(Duration.ofMillis(700)).build();
        Rule shadow = Rule.builder("shadow").algorithm(Algorithm.SLIDING_WINDOW_LOG).limit(5).window(Duration.ofSeconds(2))
                .dryRun(true).build();
        Rule month = Rule.builder("month").algorithm(Algorithm.FIXED_WINDOW).limit(1000)
                .calendar(ZoneId.of("Europe/Berlin")).window(java.time.Period.ofMonths(1)).build();
        Rule exports = Rule.builder("exports").algorithm(Algorithm.CONCURRENCY).limit(3).build();
        long slot = 0x0102030405060708L;
        int size = RequestCodec.NOW_BYTES
                + RequestCodec.ruleSize(RequestCodec.Mode.ENFORCING, false, false)
                + RequestCodec.ruleSize(RequestCodec.Mode.SHADOW, false, false)
                + RequestCodec.ruleSize(RequestCodec.Mode.EVALUATE, true, false)
                + RequestCodec.ruleSize(RequestCodec.Mode.ENFORCING, false, true);
        byte[] request = new RequestCodec(size, 1_764_500_000_123d)
                .rule(RequestCodec.rule(bucket), RequestCodec.Mode.ENFORCING, 3)
                .rule(RequestCodec.rule(shadow), RequestCodec.Mode.SHADOW, 1)
                .rule(RequestCodec.rule(month), RequestCodec.Mode.EVALUATE, 1).calendar(1_764_500_000_000L, 10, 20, 30, 40)
                .rule(RequestCodec.rule(exports), RequestCodec.Mode.ENFORCING, 1).slot(slot)
                .bytes();
        assertThat(read(request, null, 4)).isEqualTo(String.join("\n",
                "now 1764500000123",
                "5 0 10 1000 10 700 3",
                "3 1 5 2000 5 0 1",
                "0 2 1000 " + month.windowMillis() + " 1000 0 1 calendar 1764500000000 10 20 30 40",
                "7 0 3 " + exports.windowMillis() + " 3 0 1 slot " + bytes(slot)));
    }

    @Test
    void aSettlementsRulesAreFollowedByTheirTakesAndItsTokensComeInTheSecondArgument() {
        Rule api = Rule.of("api", Algorithm.TOKEN_BUCKET, 100, Duration.ofMinutes(1));
        Rule login = Rule.of("login", Algorithm.FIXED_WINDOW, 5, Duration.ofMinutes(1));
        RuleDecision.Take first = new RuleDecision.Take(1_764_500_060_000L, 17, 4, 0x1111111111111111L);
        RuleDecision.Take second = new RuleDecision.Take(1_764_500_040_000L, 0, 0, -2);
        List<RuleDecision> taken = List.of(
                new RuleDecision(api, true, 10, 0, 1, 1, 0, first, RuleDecision.Source.REDIS),
                new RuleDecision(login, true, 1, 0, 1, 1, 0, second, RuleDecision.Source.REDIS));
        int size = RequestCodec.NOW_BYTES + RequestCodec.ruleSize(RequestCodec.Mode.GIVE_BACK, false, false)
                + RequestCodec.ruleSize(RequestCodec.Mode.CHARGE, false, false);
        byte[] request = new RequestCodec(size, RequestCodec.REDIS_TIME)
                .rule(RequestCodec.rule(api), RequestCodec.Mode.GIVE_BACK, 2).take(first)
                .rule(RequestCodec.rule(login), RequestCodec.Mode.CHARGE, 7).take(second)
                .bytes();
        assertThat(read(request, RequestCodec.tokens(taken), 2)).isEqualTo(String.join("\n",
                "now -1",
                "4 3 100 60000 100 0 2 take 1764500060000 17 4 token " + bytes(first.token()),
                "1 5 5 60000 5 0 7 take 1764500040000 0 0 token " + bytes(second.token())));
    }

    @Test
    void aRequestMustBeWrittenWhole() {
        Rule api = Rule.of("api", Algorithm.TOKEN_BUCKET, 100, Duration.ofMinutes(1));
        RequestCodec codec = new RequestCodec(RequestCodec.NOW_BYTES + 2 * RequestCodec.RULE_BYTES, 0)
                .rule(RequestCodec.rule(api), RequestCodec.Mode.ENFORCING, 1);
        assertThatThrownBy(codec::bytes).isInstanceOf(IllegalStateException.class).hasMessageContaining("holds 50");
    }
}
