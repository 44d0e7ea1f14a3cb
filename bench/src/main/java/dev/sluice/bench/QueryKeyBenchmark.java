package dev.sluice.bench;

import dev.sluice.key.ClientKey;
import dev.sluice.key.ClientKeyResolver;
import dev.sluice.key.KeyExpression;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

import java.util.concurrent.TimeUnit;

/**
 * A {@code query:user} client key read from hostile query strings, through the public resolver
 * as the filter calls it: the time per request must grow linearly with the query's length (the
 * figure at 64 KB about 64 times the figure at 1 KB, and microseconds, not the seconds a rescan to
 * the end of the query per pair took).
 *
 * <ul>
 *   <li>{@code a-pairs}: {@code a&a&a...&user=alice}, pairs without {@code =} (the case a search for
 *       the next {@code =} ran to the end of the query for);</li>
 *   <li>{@code user-repeated}: {@code user=&user=&...} read for {@code query:id}, which none names;</li>
 *   <li>{@code encoded-names}: {@code us%65x=1&...&user=alice}, every name decoded.</li>
 * </ul>
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 2, time = 1)
@Measurement(iterations = 3, time = 1)
@Fork(1)
public class QueryKeyBenchmark {

    @Param({"a-pairs", "user-repeated", "encoded-names"})
    public String shape;

    @Param({"1024", "8192", "65536"})
    public int length;

    private ClientKeyResolver resolver;
    private FakeExchange.Request request;

    @Setup(Level.Trial)
    public void setUp() {
        String pair = switch (shape) {
            case "a-pairs" -> "a&";
            case "user-repeated" -> "user=&";
            case "encoded-names" -> "us%65x=1&";
            default -> throw new IllegalArgumentException(shape);
        };
        StringBuilder query = new StringBuilder(length + 16);
        while (query.length() < length) query.append(pair);
        query.append("user=alice");
        resolver = new ClientKeyResolver(KeyExpression.parse(shape.equals("user-repeated") ? "query:id" : "query:user"),
                null, QueryKeyBenchmark.class.getClassLoader());
        request = new FakeExchange.Request("GET", "/login", "203.0.113.7");
        request.queryString = query.toString();
        ClientKey key = resolver.resolve(request, null);
        String expected = shape.equals("user-repeated") ? null : "q=alice";
        if (key == null ? expected != null : !key.value().equals(expected)) {
            throw new IllegalStateException(shape + ": expected " + expected + ", got " + key);
        }
    }

    @Benchmark
    public ClientKey resolve() {
        return resolver.resolve(request, null);
    }
}
