package dev.sluice.internal.algorithm;

import dev.sluice.limiter.CalendarWindows;
import dev.sluice.limiter.Rule;
import dev.sluice.limiter.RuleDecision;

/**
 * {@code fixed-window}: at most {@code limit} tokens per window, the windows aligned to the
 * epoch (multiples of {@code window} since 1970-01-01T00:00Z) so every instance agrees on them
 * without talking to the others.
 *
 * <p>A request of cost {@code c} is admitted when the window's count plus {@code c} is at most
 * {@code limit}; the count then grows by {@code c}. A denied request may retry at the start of
 * the next window ({@code retryAfterMs} = the time to the window's end), which is also when the
 * quota is full again ({@code resetMs}) and, once something was taken, when more quota comes
 * ({@code nextMs}: nothing comes back before the window ends).
 *
 * <p><b>Accuracy:</b> exact per aligned window; over an arbitrary interval of one window's
 * length, up to {@code 2 * limit} (a full window's quota at the end of one window and another at
 * the start of the next). <b>Bursts:</b> the whole quota at any moment.
 *
 * <p><b>State:</b> the count and when it ends (the end of the window it was counted in), one
 * Redis string of 17 bytes (struct {@code '<Bdd'}: tag 1, end ms, count; 104 bytes per key
 * measured, see docs/algorithms.md). Keeping the window in the value, not the key name, gives one
 * key per client and lets a caller whose clock lags count against the window already started (the
 * count has not ended on its clock) rather than opening an older one. <b>Expiry:</b> at the
 * count's end plus the margin.
 *
 * <p><b>Changed figures</b> (a plan switch, a reload): a count lasts until its end, whatever the
 * window is now: a request counted while it lasts adds to it (against the new limit) and extends
 * it to the end of the request's own window; once it has ended, counting starts afresh in the
 * current window. With an unchanged window this is the aligned fixed window above; with another
 * window, no request counted in the last window of either length is forgotten (never in the
 * client's favour), and a client switching between plans cannot end its count early.
 *
 * <p><b>Calendar windows</b> ({@code rule.<r>.calendar}, {@link CalendarWindows}): the windows are
 * those of a time zone's calendar (a day from midnight there, a month from the 1st) rather than
 * multiples of the window since the epoch; everything else is as above, a count ending at the end of
 * its calendar window. A change of zone or of calendar window is a change of window as above: the
 * count lasts until its end (so nothing is forgotten), and the next count ends with the new calendar's
 * window. The window a request falls in is computed once per window and kept ({@link #windowAt}).
 *
 * <p><b>Giving back</b> ({@code rule.<r>.count}): the count drops by the cost while it is the count
 * the request was added to (its end has not moved), else nothing: the request then no longer counts.
 */
public final class FixedWindow extends RateAlgorithm {

    /**
     * The largest count a window holds once charged past its limit, and the most one charge adds: 2^51,
     * whatever the window (a count is only added to and compared, so it stays exact in the script's
     * doubles; the debt ends with the window).
     */
    static final long MAX_CHARGED_COUNT = 1L << 51;

    static final class State extends KeyState {
        /** When the count ends; the count applies before it. */
        long end = Long.MIN_VALUE;
        long count;
    }

    /** The rule's calendar, or null for windows aligned to the epoch. */
    private final CalendarWindows calendar;
    /** The calendar window last asked for: most requests fall in it. */
    private volatile CalendarWindows.Window current;

    FixedWindow(Rule rule) {
        super(rule);
        this.calendar = rule.calendar();
    }

    @Override
    public long capacity() {
        return limit;
    }

    @Override
    public KeyState newState() {
        return new State();
    }

    @Override
    public Verdict decide(KeyState state, long now, long cost) {
        State s = (State) state;
        long count = now < s.end ? s.count : 0;
        long resetNow = count > 0 ? s.end - now : 0; // nothing comes back before the count ends
        if (cost > limit) {
            return inCalendar(impossible(limit - count, resetNow), now);
        }
        if (count + cost > limit) {
            return inCalendar(Verdict.deny(limit - count, resetNow, s.end - now), now);
        }
        long end = end(s, now);
        Verdict admit = Verdict.admit(limit - count, resetNow, resetNow, limit - count - cost, end - now, end - now, 0, end,
                0, 0);
        return calendar == null ? admit : admit.inWindow(windowAt(now).lengthMs());
    }

    @Override
    public void take(KeyState state, long now, long cost) {
        State s = (State) state;
        s.count = (now < s.end ? s.count : 0) + cost;
        s.end = end(s, now);
        s.expiresAtMs = s.end + EXPIRY_MARGIN_MS;
    }

    /**
     * The count that applies at {@code now} (the request's own while it lasts), or a new one in the current
     * window, grows by {@code extra}, past the limit if need be: as a request taken at {@code now}.
     */
    @Override
    public void charge(KeyState state, long now, long extra) {
        State s = (State) state;
        s.count = Math.min((now < s.end ? s.count : 0) + Math.min(extra, MAX_CHARGED_COUNT), MAX_CHARGED_COUNT);
        s.end = end(s, now);
        s.expiresAtMs = s.end + EXPIRY_MARGIN_MS;
    }

    /**
     * The count drops by the cost while the request is in it: while the count still ends where the
     * request's take left it ({@code take.ms()}). A count's end only grows, and strictly whenever a
     * count starts afresh, so an unchanged end is the count the request was added to.
     */
    @Override
    public void giveBack(KeyState state, long now, long cost, RuleDecision.Take take) {
        State s = (State) state;
        if (s.end == take.ms()) {
            s.count -= Math.min(cost, s.count);
        }
    }

    /**
     * When the count ends once a request at {@code now} is added: the end of the request's window,
     * or the stored count's end if that is later and the count still applies (a lagging clock, a
     * longer window before).
     */
    private long end(State s, long now) {
        long windowEnd = calendar != null ? windowAt(now).endMs() : floorDiv(now, windowMs) * windowMs + windowMs;
        return now < s.end ? Math.max(s.end, windowEnd) : windowEnd;
    }

    private Verdict inCalendar(Verdict v, long now) {
        return calendar == null ? v : v.inWindow(windowAt(now).lengthMs());
    }

    /** The rule's calendar, or null. */
    CalendarWindows calendar() {
        return calendar;
    }

    /** The calendar window holding {@code now}. */
    CalendarWindows.Window windowAt(long now) {
        CalendarWindows.Window w = current;
        if (w == null || !w.contains(now)) {
            current = w = calendar.windowAt(now);
        }
        return w;
    }
}
