package dev.sluice.key;

import java.util.Locale;

/**
 * Whether a rule's key values keep their case ({@code rule.<name>.key-case}).
 *
 * <p>{@link #INSENSITIVE} folds the values of headers, query parameters, attributes, a
 * {@code class:} resolver and the principal, before they are bounded or hashed into a client key,
 * as {@code value.toLowerCase(Locale.ROOT).toUpperCase(Locale.ROOT).toLowerCase(Locale.ROOT)}
 * (plain ASCII: lower-cased alone, which is the same): the same in every locale (a server whose
 * default locale is Turkish folds {@code I} to {@code i}, not to dotless {@code ı}), and closer to
 * Unicode case folding than lower-casing alone, since the upper-casing expands {@code ß} to
 * {@code SS} ({@code Straße}, {@code STRASSE}, {@code STRAẞE} and {@code strasse} are one client)
 * and maps the dotless {@code ı}, the long {@code ſ} and the final {@code ς} to the letters they
 * are variants of (the first lower-casing brings the capital {@code ẞ} and the Kelvin sign to
 * {@code ß} and {@code k}). It does not normalize: a composed {@code é} and
 * {@code e} with a combining accent stay two values, and the dotted capital {@code İ} folds to
 * {@code i} followed by a combining dot, not to {@code i}. The client address and the session id
 * are never folded: addresses are canonical already, session ids are credentials whose case matters.
 */
public enum KeyCase {
    /** Values as they are: {@code Alice} and {@code alice} are two clients (the default). */
    SENSITIVE,
    /** Values folded: {@code Alice}, {@code ALICE} and {@code alice} are one client. */
    INSENSITIVE;

    /** {@code value} as this rule counts it. */
    public String apply(String value) {
        if (this == SENSITIVE || value == null) return value;
        boolean capitals = false;
        for (int i = 0, n = value.length(); i < n; i++) {
            char c = value.charAt(i);
            if (c >= 0x80) return value.toLowerCase(Locale.ROOT).toUpperCase(Locale.ROOT).toLowerCase(Locale.ROOT);
            capitals |= c >= 'A' && c <= 'Z';
        }
        return capitals ? value.toLowerCase(Locale.ROOT) : value; // plain ASCII without capitals: no copy
    }
}
