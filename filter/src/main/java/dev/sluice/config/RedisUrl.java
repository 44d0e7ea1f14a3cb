package dev.sluice.config;

import dev.sluice.config.SluiceConfig.HostPort;

import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.Locale;

/**
 * A parsed {@code redis.url}: {@code redis://[user[:password]@]host[:port][/db]}, or
 * {@code rediss://} for TLS. User and password are percent-decoded ({@code %40} for {@code @});
 * an unescaped {@code @} in the password is tolerated because the last {@code @} ends the user
 * part. Without a colon the user part is a user name (an ACL user without password), as in the
 * contract; {@code redis://:password@host} gives the password of the default user. IPv6 hosts go
 * in brackets.
 *
 * <p>The password never appears in {@link #toString()} nor in any error message.
 *
 * @param ssl      {@code rediss://}
 * @param user     the ACL user, or {@code null}
 * @param password the password, or {@code null}
 * @param address  host and port (default 6379)
 * @param database the database index (default 0)
 */
record RedisUrl(boolean ssl, String user, String password, HostPort address, int database) {

    static final int DEFAULT_PORT = 6379;

    static final String ACCEPTED = "redis://[user[:password]@]host[:port][/db], or rediss:// for TLS,"
            + " e.g. redis://localhost:6379/0 or rediss://app:s3cr%40t@[2001:db8::1]:6380"
            + " (percent-encode '@', ':' and '%' in user and password)";

    /**
     * @throws ConfigException naming {@code redis.url} and saying what is wrong, the password masked
     */
    static RedisUrl parse(String value) {
        String lower = value.toLowerCase(Locale.ROOT);
        boolean ssl;
        String rest;
        if (lower.startsWith("redis://")) {
            ssl = false;
            rest = value.substring("redis://".length());
        } else if (lower.startsWith("rediss://")) {
            ssl = true;
            rest = value.substring("rediss://".length());
        } else {
            throw invalid(value, "it must start with redis:// or rediss://");
        }

        String user = null;
        String password = null;
        int at = rest.lastIndexOf('@');
        if (at >= 0) {
            String userInfo = rest.substring(0, at);
            rest = rest.substring(at + 1);
            int colon = userInfo.indexOf(':');
            user = emptyToNull(percentDecode(value, colon < 0 ? userInfo : userInfo.substring(0, colon)));
            password = colon < 0 ? null : emptyToNull(percentDecode(value, userInfo.substring(colon + 1)));
        }
        if (rest.indexOf('?') >= 0 || rest.indexOf('#') >= 0) {
            throw invalid(value, "query parameters and fragments are not supported; use the redis.* keys");
        }

        int slash = rest.indexOf('/');
        String hostPort = slash < 0 ? rest : rest.substring(0, slash);
        String path = slash < 0 ? "" : rest.substring(slash + 1);
        HostPort address;
        try {
            address = HostPorts.parse(hostPort, DEFAULT_PORT);
        } catch (IllegalArgumentException bad) {
            throw invalid(value, bad.getMessage());
        }
        return new RedisUrl(ssl, user, password, address, database(value, path));
    }

    /**
     * The value with the password replaced by {@value ConfigKeys#MASK}, for messages and diagnostics.
     * Also masks what looks like a password in a malformed URL (a non-numeric "port" without {@code @}).
     */
    static String masked(String value) {
        int scheme = value.indexOf("://");
        int authority = scheme < 0 ? 0 : scheme + 3;
        int at = value.lastIndexOf('@');
        if (at >= authority) {
            String userInfo = value.substring(authority, at);
            int colon = userInfo.indexOf(':');
            if (colon < 0) return value;
            return value.substring(0, authority) + userInfo.substring(0, colon) + ":" + ConfigKeys.MASK + value.substring(at);
        }
        int end = value.indexOf('/', authority);
        if (end < 0) end = value.length();
        String hostPort = value.substring(authority, end);
        int colon = hostPort.lastIndexOf(':');
        if (hostPort.startsWith("[") || colon < 0 || hostPort.indexOf(':') != colon) return value;
        String port = hostPort.substring(colon + 1);
        if (!port.isEmpty() && port.chars().allMatch(c -> c >= '0' && c <= '9')) return value;
        return value.substring(0, authority + colon + 1) + ConfigKeys.MASK + value.substring(end);
    }

    @Override
    public String toString() {
        String host = address.toString();
        String userInfo = user == null && password == null ? ""
                : (user == null ? "" : user) + (password == null ? "" : ":" + ConfigKeys.MASK) + "@";
        return (ssl ? "rediss://" : "redis://") + userInfo + host + "/" + database;
    }

    private static int database(String value, String path) {
        if (path.isEmpty()) return 0;
        if (path.length() > 9 || !path.chars().allMatch(c -> c >= '0' && c <= '9')) {
            throw invalid(value, "the database '/" + path + "' must be a number, e.g. /0");
        }
        return Integer.parseInt(path);
    }

    private static String percentDecode(String value, String s) {
        if (s.indexOf('%') < 0) return s;
        // '%' is ASCII and never part of a multi-byte UTF-8 sequence, so decode on the bytes
        byte[] in = s.getBytes(StandardCharsets.UTF_8);
        ByteArrayOutputStream bytes = new ByteArrayOutputStream(in.length);
        for (int i = 0; i < in.length; i++) {
            if (in[i] == '%') {
                int hi = i + 2 < in.length ? Character.digit((char) in[i + 1], 16) : -1;
                int lo = hi >= 0 ? Character.digit((char) in[i + 2], 16) : -1;
                if (lo < 0) throw invalid(value, "a '%' in the user or password must start a %XX escape");
                bytes.write(hi * 16 + lo);
                i += 2;
            } else {
                bytes.write(in[i]);
            }
        }
        try {
            return StandardCharsets.UTF_8.newDecoder()
                    .onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT)
                    .decode(ByteBuffer.wrap(bytes.toByteArray()))
                    .toString();
        } catch (CharacterCodingException e) {
            throw invalid(value, "the %XX escapes in the user or password are not UTF-8");
        }
    }

    private static String emptyToNull(String s) {
        return s.isEmpty() ? null : s;
    }

    /** The message quotes the value only through {@link ConfigException}, which masks the password. */
    private static ConfigException invalid(String value, String problem) {
        return new ConfigException(ConfigKeys.REDIS_URL, value, ACCEPTED + "; " + problem);
    }
}
