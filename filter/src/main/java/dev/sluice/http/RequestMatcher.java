package dev.sluice.http;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;

/**
 * Which requests a rule ({@code match}) or {@code exclude} covers: a list of {@code [METHODS ]pattern}
 * entries, any one of which matching is enough. Compiled once; {@link #matches} uses no regex and
 * allocates nothing.
 *
 * <ul>
 *   <li>{@code METHODS} is one method or several joined by {@code |} ({@code POST /login},
 *       {@code GET|HEAD /feed}), compared case-insensitively; without it any method matches.
 *       ({@code |} rather than {@code ,}, because the configuration value is itself comma-separated.)
 *       {@code GET} also means {@code HEAD}: a servlet answers {@code HEAD} from its {@code doGet}, so a
 *       {@code GET} rule that missed {@code HEAD} would let a client probe the same resource unlimited.</li>
 *   <li>A pattern starts with {@code /} and is matched against the path relative to the context path
 *       ({@code servletPath + pathInfo}), case-sensitively, segment by segment.</li>
 *   <li>{@code *} matches any characters within one segment: {@code /users/*} matches
 *       {@code /users/42} (and {@code /users/}), {@code /static/*.css} matches {@code /static/site.css}.</li>
 *   <li>{@code **}, a whole segment, matches any number of segments including none: {@code /api/**}
 *       matches {@code /api}, {@code /api/} and {@code /api/a/b}; {@code /**} matches every path.</li>
 *   <li>A pattern without {@code *} matches that path, with or without one trailing slash: {@code /login}
 *       matches {@code /login} and {@code /login/} (containers serve both to the same servlet, so a rule
 *       on one would otherwise be bypassed through the other), not {@code /login/x} nor {@code /login//}.</li>
 * </ul>
 * An empty list matches nothing.
 */
public final class RequestMatcher {

    static final String ACCEPTED = "accepted: [METHOD[|METHOD...] ]/path/pattern, where * matches within one "
            + "path segment and ** (a whole segment) any number of segments, e.g. POST /login, GET|HEAD /feed, "
            + "/api/**, /static/*.css";

    private static final RequestMatcher NOTHING = new RequestMatcher(new Entry[0]);

    private final Entry[] entries;

    private RequestMatcher(Entry[] entries) {
        this.entries = entries;
    }

    /**
     * Compiles the entries; blank entries are skipped.
     *
     * @throws IllegalArgumentException naming the invalid entry and the accepted forms
     */
    public static RequestMatcher parse(List<String> entries) {
        if (entries == null || entries.isEmpty()) return NOTHING;
        List<Entry> compiled = new ArrayList<>(entries.size());
        for (String entry : entries) {
            if (entry != null && !entry.isBlank()) {
                compiled.add(Entry.parse(entry));
            }
        }
        return compiled.isEmpty() ? NOTHING : new RequestMatcher(compiled.toArray(new Entry[0]));
    }

    /**
     * Whether any entry matches.
     *
     * @param method the request method
     * @param path   the path within the web application ({@code servletPath + pathInfo}); {@code ""} is {@code /}
     */
    public boolean matches(String method, String path) {
        if (path == null || path.isEmpty()) path = "/";
        for (Entry entry : entries) {
            if (entry.matches(method, path)) return true;
        }
        return false;
    }

    public boolean isEmpty() {
        return entries.length == 0;
    }

    /** The matcher of an empty list: matches nothing. */
    public static RequestMatcher none() {
        return NOTHING;
    }

    /** The entries as configured (stripped), in order. */
    public List<String> entries() {
        List<String> texts = new ArrayList<>(entries.length);
        for (Entry e : entries) texts.add(e.text);
        return List.copyOf(texts);
    }

    /** Equal when the entries are the same text in the same order. */
    @Override
    public boolean equals(Object o) {
        return o instanceof RequestMatcher other && entries().equals(other.entries());
    }

    @Override
    public int hashCode() {
        return entries().hashCode();
    }

    @Override
    public String toString() {
        return List.of(entries).toString();
    }

    /** One {@code [METHODS ]pattern}. */
    private static final class Entry {
        private final String text;
        private final String[] methods; // upper case; empty = any
        private final Segment[] segments;
        /** A pattern without {@code *}: the path it names without a trailing slash, else null. */
        private final String literal;
        /**
         * A pattern whose last segment is stars alone ({@code /users/*}), which matches a path's empty
         * last segment ({@code /users/}): the segments before it, which match that path without its
         * trailing slash ({@code /users}, as a servlet mapped to {@code /users/*} serves it); else null.
         */
        private final Segment[] beforeEmptyLast;

        private Entry(String text, String[] methods, Segment[] segments, String pattern) {
            this.text = text;
            this.methods = methods;
            this.segments = segments;
            this.literal = pattern.indexOf('*') >= 0 ? null
                    : pattern.length() > 1 && pattern.endsWith("/") ? pattern.substring(0, pattern.length() - 1) : pattern;
            int n = segments.length;
            this.beforeEmptyLast = n > 1 && segments[n - 1].matchesEmpty() ? Arrays.copyOf(segments, n - 1) : null;
        }

        static Entry parse(String raw) {
            String text = raw.strip();
            String[] words = text.split("\\s+");
            if (words.length > 2) {
                throw invalid(raw, "expected at most one method list and one path pattern separated by a space");
            }
            String[] methods = words.length == 2 ? methods(raw, words[0]) : new String[0];
            String pattern = words[words.length - 1];
            return new Entry(text, methods, segments(raw, pattern), pattern);
        }

        private static String[] methods(String raw, String list) {
            String[] methods = list.split("\\|", -1);
            for (int i = 0; i < methods.length; i++) {
                String method = methods[i];
                if (method.isEmpty()) throw invalid(raw, "empty method in '" + list + "'");
                for (int k = 0; k < method.length(); k++) {
                    char c = method.charAt(k);
                    if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '-' || c == '_')) {
                        throw invalid(raw, "'" + method + "' is not an HTTP method"
                                + (c == ',' ? " (join methods with |, not ,)" : ""));
                    }
                }
                methods[i] = method.toUpperCase(Locale.ROOT);
            }
            List<String> listed = List.of(methods);
            if (listed.contains("GET") && !listed.contains("HEAD")) {
                String[] withHead = Arrays.copyOf(methods, methods.length + 1);
                withHead[methods.length] = "HEAD";
                return withHead;
            }
            return methods;
        }

        private static Segment[] segments(String raw, String pattern) {
            if (!pattern.startsWith("/")) {
                throw invalid(raw, "the path pattern must start with /");
            }
            if (pattern.indexOf('?') >= 0) {
                // the path a request is matched by never holds its query: such a pattern would match nothing
                throw invalid(raw, "a path pattern matches the path only, never a query string ('?'): match the path"
                        + " alone (a key can read a query parameter: query:NAME)");
            }
            String[] parts = pattern.substring(1).split("/", -1);
            // a pattern's one trailing slash is dropped, as a path's is when matched: /users/*/password-reset/
            // names /users/alice/password-reset too, as the literal /login/ names /login
            int n = parts.length > 1 && parts[parts.length - 1].isEmpty() ? parts.length - 1 : parts.length;
            Segment[] segments = new Segment[n];
            for (int i = 0; i < n; i++) {
                if (parts[i].isEmpty() && i < parts.length - 1) {
                    throw invalid(raw, "the path pattern has an empty segment (//)");
                }
                segments[i] = Segment.compile(raw, parts[i]);
            }
            return segments;
        }

        boolean matches(String method, String path) {
            if (methods.length > 0 && !methodMatches(method)) return false;
            if (literal != null) return literalMatches(path);
            // as a literal: with or without one trailing slash (/users/alice/password-reset/ is served as
            // /users/alice/password-reset by the containers and the frameworks on them)
            int length = path.length();
            if (length > 1 && path.charAt(length - 1) == '/') {
                return pathMatches(segments, path, length) || path.charAt(length - 2) != '/' && pathMatches(segments, path, length - 1);
            }
            // and without one as with it: /users/* matches /users/, so /users too
            return pathMatches(segments, path, length) || beforeEmptyLast != null && pathMatches(beforeEmptyLast, path, length);
        }

        /** The literal path, or it with one trailing slash. */
        private boolean literalMatches(String path) {
            int n = literal.length();
            if (literal.equals("/")) return path.equals("/");
            return path.startsWith(literal) && (path.length() == n || (path.length() == n + 1 && path.charAt(n) == '/'));
        }

        private boolean methodMatches(String method) {
            for (String m : methods) {
                if (m.equalsIgnoreCase(method)) return true;
            }
            return false;
        }

        /**
         * Wildcard matching over segments, {@code **} being the star: the classic greedy walk that
         * remembers the last {@code **} and retries from one segment further on a mismatch. Linear
         * in practice, O(segments x pattern) at worst, without recursion or allocation.
         */
        private static boolean pathMatches(Segment[] segments, String path, int length) {
            if (path.charAt(0) != '/') return false;
            int p = 0;              // pattern segment
            int s = 1;              // start of the current path segment
            int starP = -1;         // pattern index of the last ** seen
            int starS = -1;         // path position that ** currently extends to
            while (s <= length) {
                int end = path.indexOf('/', s);
                if (end < 0 || end > length) end = length;
                if (p < segments.length && segments[p] == Segment.ANY_SEGMENTS) {
                    starP = p++;
                    starS = s;
                    continue;
                }
                if (p < segments.length && segments[p].matches(path, s, end)) {
                    p++;
                    s = end + 1;
                    continue;
                }
                if (starP < 0) return false;
                // let the last ** swallow one more segment and retry
                p = starP + 1;
                int swallowedEnd = path.indexOf('/', starS);
                starS = swallowedEnd < 0 || swallowedEnd >= length ? length + 1 : swallowedEnd + 1;
                s = starS;
            }
            while (p < segments.length && segments[p] == Segment.ANY_SEGMENTS) p++;
            return p == segments.length;
        }

        @Override
        public String toString() {
            return text;
        }
    }

    /** One pattern segment: literal, a glob with {@code *}, or {@code **}. */
    private static final class Segment {
        static final Segment ANY_SEGMENTS = new Segment(null);

        /** The literal pieces between {@code *}s; one piece = a literal segment. */
        private final String[] pieces;

        private Segment(String[] pieces) {
            this.pieces = pieces;
        }

        static Segment compile(String raw, String part) {
            if (part.equals("**")) return ANY_SEGMENTS;
            if (part.contains("**")) {
                throw invalid(raw, "** must be a whole path segment, as in /api/**");
            }
            return new Segment(part.split("\\*", -1));
        }

        /** Whether this matches an empty segment: stars alone ({@code *}). */
        boolean matchesEmpty() {
            if (pieces == null || pieces.length < 2) return false;
            for (String piece : pieces) {
                if (!piece.isEmpty()) return false;
            }
            return true;
        }

        /** Whether {@code path[from, to)} (one segment, no {@code /}) matches. */
        boolean matches(String path, int from, int to) {
            String first = pieces[0];
            if (pieces.length == 1) {
                return to - from == first.length() && path.startsWith(first, from);
            }
            String last = pieces[pieces.length - 1];
            if (to - from < first.length() + last.length()
                    || !path.startsWith(first, from)
                    || !path.startsWith(last, to - last.length())) {
                return false;
            }
            int at = from + first.length();
            int limit = to - last.length();
            for (int i = 1; i < pieces.length - 1; i++) {
                String piece = pieces[i];
                if (piece.isEmpty()) continue;
                int found = indexOf(path, piece, at, limit);
                if (found < 0) return false;
                at = found + piece.length();
            }
            return true;
        }

        private static int indexOf(String path, String piece, int from, int limit) {
            for (int i = from; i + piece.length() <= limit; i++) {
                if (path.startsWith(piece, i)) return i;
            }
            return -1;
        }
    }

    private static IllegalArgumentException invalid(String entry, String problem) {
        return new IllegalArgumentException("invalid path pattern '" + entry + "': " + problem + "; " + ACCEPTED);
    }
}
