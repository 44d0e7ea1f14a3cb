package dev.sluice.key;

import dev.sluice.key.KeyExpression.Kind;
import dev.sluice.key.KeyExpression.Source;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpSession;

import java.lang.reflect.InvocationTargetException;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.security.Principal;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;

/**
 * Resolves a rule's {@link KeyExpression} against a request to its client key, in the bounded,
 * tagged layout of {@link ClientKey} ({@code ip=203.0.113.7}, {@code h=key-42+ip=...}), or
 * {@code null} when no alternative is present (then the rule does not apply). Built once per rule:
 * tags, names and {@code class:} instances are prepared here; a request costs a few lookups.
 *
 * <p>Sources and their tags: {@code ip} ({@code ip}, see {@link ClientIpResolver}), {@code user}
 * ({@code u}: the principal's name), {@code header:NAME} ({@code h}: the first line),
 * {@code query:NAME} ({@code q}: read from {@code getQueryString()} and URL-decoded, never
 * {@code getParameter}, which could consume a POST body), {@code session} ({@code s}: the id of an
 * existing session, never creating one; always hashed, as a session id is a credential),
 * {@code attr:NAME} ({@code a}: {@code toString()} of the attribute), {@code global} (the constant
 * {@code global}), {@code class:FQCN} ({@code c}: a {@link KeySource}). Empty or blank values
 * are absent. When one expression reads two different names of a kind
 * ({@code header:X-Api-Key|header:X-Client-Id}), their tags carry the name ({@code h:x-api-key=...})
 * or, for names that are long or unsafe in a key, the kind's ordinal ({@code h2=...}), so the two
 * never share a counter.
 *
 * <p>An {@code ip} key of the clients seen last is remembered ({@value #RECENT_IP_KEYS} at most, by the
 * client's identity): a client's next request does not make its key again. Safe for any number of threads.
 */
public final class ClientKeyResolver {

    private static final int MAX_TAG_NAME = 32;
    /** Keys remembered, a power of two: a table of them by the identity's hash, the last one per slot. */
    static final int RECENT_IP_KEYS = 64;

    private final KeyExpression expression;
    private final ClientIpResolver ipResolver;
    private final KeyCase keyCase;
    private final Part[][] alternatives;
    /** Racy by design: a slot holds an immutable record, so a reader sees a whole one, or an older one. */
    private final IpKey[] recentIpKeys = new IpKey[RECENT_IP_KEYS];

    /**
     * A resolver that keeps the values' case ({@link KeyCase#SENSITIVE}).
     *
     * @see #ClientKeyResolver(KeyExpression, ClientIpResolver, ClassLoader, KeyCase)
     */
    public ClientKeyResolver(KeyExpression expression, ClientIpResolver ipResolver, ClassLoader classLoader) {
        this(expression, ipResolver, classLoader, KeyCase.SENSITIVE);
    }

    /**
     * @param expression  the rule's key expression
     * @param ipResolver  how to find the client address; may be null if the expression has no {@code ip}
     * @param classLoader loads {@code class:} sources (the web application's)
     * @param keyCase     whether values of headers, query parameters, attributes, {@code class:} sources and
     *                    the principal are folded ({@link KeyCase#INSENSITIVE}) before they make the key
     * @throws IllegalArgumentException when a {@code class:} source cannot be loaded or instantiated
     */
    public ClientKeyResolver(KeyExpression expression, ClientIpResolver ipResolver, ClassLoader classLoader,
                             KeyCase keyCase) {
        this.expression = Objects.requireNonNull(expression, "expression");
        this.keyCase = Objects.requireNonNull(keyCase, "keyCase");
        if (ipResolver == null && expression.uses(Kind.IP)) {
            throw new IllegalArgumentException("key expression '" + expression + "' uses ip but no ClientIpResolver was given");
        }
        this.ipResolver = ipResolver;
        Map<Source, String> tags = tags(expression);
        Map<String, KeySource> instances = new HashMap<>();
        List<List<Source>> parsed = expression.alternatives();
        this.alternatives = new Part[parsed.size()][];
        for (int a = 0; a < parsed.size(); a++) {
            List<Source> composite = parsed.get(a);
            Part[] parts = new Part[composite.size()];
            for (int p = 0; p < parts.length; p++) {
                Source source = composite.get(p);
                KeySource custom = source.kind() == Kind.CLASS
                        ? instances.computeIfAbsent(source.argument(), name -> instantiate(name, classLoader))
                        : null;
                parts[p] = new Part(source.kind(), source.argument(), tags.get(source), custom);
            }
            alternatives[a] = parts;
        }
    }

    /** The key for {@code request}, resolving the client address if the expression needs it. */
    public ClientKey resolve(HttpServletRequest request) {
        return resolve(request, null, false);
    }

    /**
     * The key for {@code request}, with the client address the caller already resolved (once per
     * request, for all rules) through {@link ClientIpResolver#resolve}.
     *
     * @param client the request's client; {@code null} when the peer has no IP address ({@code ip} is then absent)
     * @return the bounded client key, or {@code null} when the expression resolves to nothing
     */
    public ClientKey resolve(HttpServletRequest request, ClientAddress client) {
        return resolve(request, client, true);
    }

    private ClientKey resolve(HttpServletRequest request, ClientAddress client, boolean clientKnown) {
        StringBuilder key = null;
        nextAlternative:
        for (Part[] parts : alternatives) {
            if (parts.length == 1 && parts[0].kind != Kind.GLOBAL) {
                // one source (ip, header:X-Api-Key...): its tag and value, without a builder
                Part part = parts[0];
                if (part.kind == Kind.IP && !clientKnown) {
                    client = ipResolver.resolve(request.getRemoteAddr(), request.getHeaders(ipResolver.headerName()));
                    clientKnown = true;
                }
                String value = value(part, request, client);
                if (value == null || value.isBlank()) continue;
                return part.kind == Kind.IP ? ipKey(part, value)
                        : ClientKey.ofPart(part.prefix, value, part.kind == Kind.SESSION);
            }
            if (key != null) key.setLength(0);
            for (Part part : parts) {
                if (part.kind == Kind.GLOBAL) {
                    if (key == null) key = new StringBuilder(64);
                    if (key.length() > 0) key.append('+');
                    key.append(part.tag);
                    continue;
                }
                if (part.kind == Kind.IP && !clientKnown) {
                    client = ipResolver.resolve(request.getRemoteAddr(), request.getHeaders(ipResolver.headerName()));
                    clientKnown = true;
                }
                String value = value(part, request, client);
                if (value == null || value.isBlank()) continue nextAlternative;
                if (key == null) key = new StringBuilder(64);
                if (key.length() > 0) key.append('+');
                ClientKey.appendPart(key, part.tag, value, part.kind == Kind.SESSION);
            }
            return ClientKey.finish(key);
        }
        return null;
    }

    /**
     * The raw value of the first present alternative (an expression of single sources, such as a
     * rule's {@code plan}): not bounded or tagged, for comparing with configured names only, never
     * for a Redis key. {@code null} when no alternative is present.
     *
     * @param client the request's client as resolved by the caller, or {@code null}
     */
    public String resolveValue(HttpServletRequest request, ClientAddress client) {
        for (Part[] parts : alternatives) {
            Part part = parts[0];
            String value = switch (part.kind) {
                case IP -> client == null ? null : client.identity();
                case GLOBAL -> "global";
                default -> value(part, request);
            };
            if (value != null && !value.isBlank()) return value.strip();
        }
        return null;
    }

    /** The key of a client that is its address alone, remembered for the client's next requests. */
    private ClientKey ipKey(Part part, String identity) {
        int slot = identity.hashCode() & (RECENT_IP_KEYS - 1);
        IpKey seen = recentIpKeys[slot];
        if (seen != null && seen.identity.equals(identity)) return seen.key;
        ClientKey key = ClientKey.ofPart(part.prefix, identity, false);
        recentIpKeys[slot] = new IpKey(identity, key);
        return key;
    }

    private record IpKey(String identity, ClientKey key) {
    }

    /** A part's value as it goes into the key: the client's identity, or the source's value folded per key-case. */
    private String value(Part part, HttpServletRequest request, ClientAddress client) {
        if (part.kind == Kind.IP) return client == null ? null : client.identity();
        String value = value(part, request);
        return part.kind == Kind.SESSION ? value : keyCase.apply(value);
    }

    private static String value(Part part, HttpServletRequest request) {
        switch (part.kind) {
            case USER -> {
                Principal principal = request.getUserPrincipal();
                return principal == null ? null : principal.getName();
            }
            case HEADER -> {
                return request.getHeader(part.name);
            }
            case QUERY -> {
                return queryParameter(request.getQueryString(), part.name);
            }
            case SESSION -> {
                HttpSession session = request.getSession(false);
                return session == null ? null : session.getId();
            }
            case ATTR -> {
                Object attribute = request.getAttribute(part.name);
                return attribute == null ? null : attribute.toString();
            }
            case CLASS -> {
                return part.custom.resolve(request);
            }
            default -> throw new IllegalStateException("unexpected source " + part.kind);
        }
    }

    /**
     * The first value of parameter {@code name} in a raw query string, URL-decoded (UTF-8,
     * {@code +} is a space); malformed escapes are kept as they are. {@code null} if absent.
     * One pass over the query: each character is read once, and a pair's name is decoded (when it
     * holds {@code %} or {@code +}) or compared only within the pair, so a hostile query
     * ({@code ?a&a&a...}) costs time linear in its length.
     */
    static String queryParameter(CharSequence query, String name) {
        if (query == null) return null;
        int length = query.length();
        int start = 0;            // the current pair's first character
        int equals = -1;          // its first '=', or -1
        boolean encoded = false;  // a '%' or '+' in its name
        for (int i = 0; i <= length; i++) {
            char c = i == length ? '&' : query.charAt(i);
            if (c == '&') {
                int nameEnd = equals < 0 ? i : equals;
                if (nameMatches(query, start, nameEnd, name, encoded)) {
                    return equals < 0 ? "" : decode(query.subSequence(equals + 1, i).toString());
                }
                start = i + 1;
                equals = -1;
                encoded = false;
            } else if (equals < 0) {
                if (c == '=') equals = i;
                else if (c == '%' || c == '+') encoded = true;
            }
        }
        return null;
    }

    private static boolean nameMatches(CharSequence query, int from, int to, String name, boolean encoded) {
        if (encoded) return decode(query.subSequence(from, to).toString()).equals(name);
        if (to - from != name.length()) return false;
        for (int i = 0; i < name.length(); i++) {
            if (query.charAt(from + i) != name.charAt(i)) return false;
        }
        return true;
    }

    private static String decode(String text) {
        if (text.indexOf('%') < 0 && text.indexOf('+') < 0) return text;
        try {
            return URLDecoder.decode(text, StandardCharsets.UTF_8);
        } catch (IllegalArgumentException malformed) {
            return text;
        }
    }

    /**
     * Tag per source: the kind's short tag, plus the name (or the kind's ordinal) when the
     * expression reads more than one name of that kind.
     */
    private static Map<Source, String> tags(KeyExpression expression) {
        Map<Kind, List<String>> namesByKind = new HashMap<>();
        for (List<Source> composite : expression.alternatives()) {
            for (Source source : composite) {
                List<String> names = namesByKind.computeIfAbsent(source.kind(), k -> new ArrayList<>());
                if (source.argument() != null && !names.contains(source.argument())) names.add(source.argument());
            }
        }
        Map<Source, String> tags = new HashMap<>();
        for (List<Source> composite : expression.alternatives()) {
            for (Source source : composite) {
                String tag = shortTag(source.kind());
                List<String> names = namesByKind.get(source.kind());
                if (names.size() > 1) {
                    String name = source.argument().toLowerCase(Locale.ROOT);
                    tag = name.length() <= MAX_TAG_NAME && ClientKey.isPlain(name) && name.indexOf('=') < 0
                            ? tag + ":" + name
                            : tag + (names.indexOf(source.argument()) + 1);
                }
                tags.put(source, tag);
            }
        }
        return tags;
    }

    private static String shortTag(Kind kind) {
        return switch (kind) {
            case IP -> "ip";
            case USER -> "u";
            case HEADER -> "h";
            case QUERY -> "q";
            case SESSION -> "s";
            case ATTR -> "a";
            case GLOBAL -> "global";
            case CLASS -> "c";
        };
    }

    private static KeySource instantiate(String className, ClassLoader classLoader) {
        String prefix = "key source class:" + className + ": ";
        Class<?> type;
        try {
            type = Class.forName(className, true, classLoader);
        } catch (ClassNotFoundException | LinkageError e) {
            throw new IllegalArgumentException(prefix + "class not found by the web application's class loader", e);
        }
        if (!KeySource.class.isAssignableFrom(type)) {
            throw new IllegalArgumentException(prefix + "does not implement " + KeySource.class.getName());
        }
        try {
            return (KeySource) type.getConstructor().newInstance();
        } catch (NoSuchMethodException | IllegalAccessException e) {
            throw new IllegalArgumentException(prefix + "needs a public no-arg constructor (and a public class)", e);
        } catch (InstantiationException e) {
            throw new IllegalArgumentException(prefix + "is abstract", e);
        } catch (InvocationTargetException e) {
            throw new IllegalArgumentException(prefix + "its constructor threw " + e.getCause(), e.getCause());
        }
    }

    public KeyExpression expression() {
        return expression;
    }

    @Override
    public String toString() {
        return "ClientKeyResolver{" + expression + '}';
    }

    /** One source, ready to read: its tag ({@code prefix}: the tag and {@code =}), name and (for {@code class:}) instance. */
    private record Part(Kind kind, String name, String tag, String prefix, KeySource custom) {
        Part(Kind kind, String name, String tag, KeySource custom) {
            this(kind, name, tag, tag + "=", custom);
        }
    }
}
