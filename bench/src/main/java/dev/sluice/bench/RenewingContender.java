package dev.sluice.bench;

import dev.sluice.internal.LimiterStack;
import dev.sluice.key.ClientKey;
import dev.sluice.limiter.Acquisition;
import dev.sluice.limiter.Algorithm;
import dev.sluice.limiter.Decision;
import dev.sluice.limiter.RateLimiter;
import dev.sluice.limiter.Rule;
import dev.sluice.limiter.RuleDecision;
import redis.clients.jedis.UnifiedJedis;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The renewal of concurrency slots' leases, as {@code Leases} makes it: {@code perCall} slots, each
 * of another client, renewed in one {@link RateLimiter#renew} (one {@code renew.lua} call). Takes
 * {@code perCall x groups} slots first (the workload's first clients, one slot each, the workload's
 * concurrency rule: its window is the lease); each {@link #tryAcquire} renews the next group, round
 * robin, at least 2 ms after that group's previous renewal (a renewal in the same millisecond would
 * not move the lease's end, and write nothing; {@code Leases} renews a third of a lease apart).
 * Fails when a slot is not held any more. Single-threaded, as the renewer thread is.
 */
final class RenewingContender implements Contender {

    private static final long APART_NANOS = TimeUnit.MILLISECONDS.toNanos(2);

    private final UnifiedJedis jedis;
    private final LimiterStack stack;
    private final RateLimiter limiter;
    private final List<List<Acquisition>> acquisitions = new ArrayList<>();
    private final List<List<RuleDecision>> taken = new ArrayList<>();
    private final long[] renewedAt;
    private final AtomicInteger next = new AtomicInteger();
    private final int perCall;

    /** On {@code jedis} (closed with this). */
    RenewingContender(UnifiedJedis jedis, Workload workload, int perCall, int groups) {
        if (perCall * groups > workload.keys) throw new IllegalArgumentException("more slots than the workload's clients");
        this.jedis = jedis;
        this.perCall = perCall;
        Rule rule = Workload.rule(Algorithm.CONCURRENCY.id(), workload);
        stack = BenchRedis.stack(jedis, BenchRedis.prefix("renew"), rule, false);
        limiter = stack.limiter();
        String[] keys = workload.clientKeys();
        for (int g = 0; g < groups; g++) {
            List<Acquisition> a = new ArrayList<>(perCall);
            List<RuleDecision> t = new ArrayList<>(perCall);
            for (int i = 0; i < perCall; i++) {
                Acquisition slot = new Acquisition(rule, ClientKey.parse(keys[g * perCall + i]));
                Decision d = limiter.decide(List.of(slot));
                if (!d.allowed()) throw new IllegalStateException("a slot was not taken: " + d.rules().get(0));
                a.add(slot);
                t.add(d.rules().get(0));
            }
            acquisitions.add(List.copyOf(a));
            taken.add(List.copyOf(t));
        }
        renewedAt = new long[groups];
        long now = System.nanoTime();
        for (int g = 0; g < groups; g++) renewedAt[g] = now;
    }

    /** Renews the next group's slots; {@code key} is not used. */
    @Override
    public boolean tryAcquire(int key) {
        int g = Math.floorMod(next.getAndIncrement(), acquisitions.size());
        long wait = renewedAt[g] + APART_NANOS - System.nanoTime();
        if (wait > 0) {
            try {
                TimeUnit.NANOSECONDS.sleep(wait);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException(e);
            }
        }
        boolean[] held = limiter.renew(acquisitions.get(g), taken.get(g));
        renewedAt[g] = System.nanoTime();
        for (boolean h : held) {
            if (!h) throw new IllegalStateException("a slot's lease ended before it was renewed");
        }
        return true;
    }

    /** Slots per renewal. */
    int perCall() {
        return perCall;
    }

    @Override
    public void close() {
        stack.close();
        jedis.close();
    }

    @Override
    public String toString() {
        return "sluice renewal of " + perCall + " slots per call";
    }
}
