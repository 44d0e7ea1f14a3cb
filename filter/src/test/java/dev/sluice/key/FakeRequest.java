package dev.sluice.key;

import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpSession;

import java.lang.reflect.Proxy;
import java.security.Principal;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * A hand-rolled {@link HttpServletRequest} for key tests: only what a client key may read is
 * answered; anything else (above all {@code getParameter*}, the body, {@code getSession()} /
 * {@code getSession(true)}) fails the test, so a resolver that reaches for it cannot pass.
 */
final class FakeRequest {

    private String remoteAddr = "192.0.2.1";
    private final Map<String, List<String>> headers = new LinkedHashMap<>();
    private String queryString;
    private final Map<String, Object> attributes = new HashMap<>();
    private String user;
    private String sessionId;
    private final List<String> calls = new ArrayList<>();

    static FakeRequest from(String remoteAddr) {
        FakeRequest request = new FakeRequest();
        request.remoteAddr = remoteAddr;
        return request;
    }

    FakeRequest header(String name, String value) {
        headers.computeIfAbsent(name.toLowerCase(Locale.ROOT), n -> new ArrayList<>()).add(value);
        return this;
    }

    FakeRequest query(String queryString) {
        this.queryString = queryString;
        return this;
    }

    FakeRequest attribute(String name, Object value) {
        attributes.put(name, value);
        return this;
    }

    FakeRequest user(String name) {
        this.user = name;
        return this;
    }

    FakeRequest session(String id) {
        this.sessionId = id;
        return this;
    }

    /** The request methods called so far, e.g. {@code getSession(false)}. */
    List<String> calls() {
        return calls;
    }

    HttpServletRequest build() {
        return (HttpServletRequest) Proxy.newProxyInstance(getClass().getClassLoader(),
                new Class<?>[] {HttpServletRequest.class}, (proxy, method, args) -> {
                    String call = method.getName() + (args == null ? "()" : "(" + args[0] + ")");
                    calls.add(call);
                    switch (method.getName()) {
                        case "getRemoteAddr":
                            return remoteAddr;
                        case "getHeader": {
                            List<String> values = headers.get(((String) args[0]).toLowerCase(Locale.ROOT));
                            return values == null ? null : values.get(0);
                        }
                        case "getHeaders": {
                            List<String> values = headers.get(((String) args[0]).toLowerCase(Locale.ROOT));
                            return Collections.enumeration(values == null ? List.of() : values);
                        }
                        case "getQueryString":
                            return queryString;
                        case "getAttribute":
                            return attributes.get((String) args[0]);
                        case "getUserPrincipal":
                            return user == null ? null : (Principal) () -> user;
                        case "getSession":
                            if (args == null || (Boolean) args[0]) {
                                throw new AssertionError("a client key must never create a session: " + call);
                            }
                            return sessionId == null ? null : fakeSession(sessionId);
                        case "toString":
                            return "FakeRequest" + calls;
                        case "hashCode":
                            return System.identityHashCode(proxy);
                        case "equals":
                            return proxy == args[0];
                        default:
                            throw new AssertionError("a client key must not call " + call);
                    }
                });
    }

    private static HttpSession fakeSession(String id) {
        return (HttpSession) Proxy.newProxyInstance(FakeRequest.class.getClassLoader(),
                new Class<?>[] {HttpSession.class}, (proxy, method, args) -> {
                    if (method.getName().equals("getId")) return id;
                    throw new AssertionError("unexpected session call " + method.getName());
                });
    }
}
