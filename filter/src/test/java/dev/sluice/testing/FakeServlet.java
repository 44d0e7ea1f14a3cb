package dev.sluice.testing;

import jakarta.servlet.FilterChain;
import jakarta.servlet.FilterConfig;
import jakarta.servlet.ServletContext;
import jakarta.servlet.ServletOutputStream;
import jakarta.servlet.WriteListener;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;

import java.lang.reflect.Proxy;
import java.util.Collections;
import java.util.Enumeration;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.UnaryOperator;

/**
 * Just enough of the Servlet API to drive {@code RateLimitFilter.doFilter} a million times in a
 * unit test, where a real container would measure the container. Real containers are exercised by
 * the integration tests in {@code src-it}.
 */
public final class FakeServlet {

    private FakeServlet() {
    }

    /** A filter configuration with these init-params. */
    public static FilterConfig filterConfig(String name, Map<String, String> params) {
        return filterConfig(name, null, params);
    }

    /** A filter configuration with these init-params, of a web application at {@code contextPath} ({@code /shop}). */
    public static FilterConfig filterConfig(String name, String contextPath, Map<String, String> params) {
        return filterConfig(name, contextPath, path -> null, params);
    }

    /**
     * A filter configuration with these init-params, of a web application at {@code contextPath}
     * whose {@code getRealPath} is {@code realPath}.
     */
    public static FilterConfig filterConfig(String name, String contextPath, UnaryOperator<String> realPath,
                                            Map<String, String> params) {
        ServletContext context = contextPath == null ? null : (ServletContext) Proxy.newProxyInstance(
                FakeServlet.class.getClassLoader(), new Class<?>[]{ServletContext.class},
                (proxy, method, args) -> switch (method.getName()) {
                    case "getContextPath" -> contextPath;
                    case "getRealPath" -> realPath.apply((String) args[0]);
                    default -> throw new UnsupportedOperationException(method.getName());
                });
        return (FilterConfig) Proxy.newProxyInstance(FakeServlet.class.getClassLoader(), new Class<?>[]{FilterConfig.class},
                (proxy, method, args) -> switch (method.getName()) {
                    case "getFilterName" -> name;
                    case "getInitParameter" -> params.get((String) args[0]);
                    case "getInitParameterNames" -> Collections.enumeration(params.keySet());
                    case "getServletContext" -> context;
                    default -> throw new UnsupportedOperationException(method.getName());
                });
    }

    /** A GET of {@code path} from {@code remoteAddr} with the given headers (name, value, name, value...). */
    public static HttpServletRequest get(String path, String remoteAddr, String... headers) {
        return request("GET", path, remoteAddr, headers);
    }

    /** A request of {@code method} for {@code path} from {@code remoteAddr} with the given headers (name, value, ...). */
    public static HttpServletRequest request(String httpMethod, String path, String remoteAddr, String... headers) {
        Map<String, String> h = new HashMap<>();
        for (int i = 0; i + 1 < headers.length; i += 2) h.put(headers[i].toLowerCase(Locale.ROOT), headers[i + 1]);
        Map<String, Object> attributes = new HashMap<>(4);
        return (HttpServletRequest) Proxy.newProxyInstance(FakeServlet.class.getClassLoader(),
                new Class<?>[]{HttpServletRequest.class}, (proxy, method, args) -> switch (method.getName()) {
                    case "getMethod" -> httpMethod;
                    case "getServletPath" -> path;
                    case "getPathInfo", "getQueryString", "getUserPrincipal" -> null;
                    case "getRemoteAddr" -> remoteAddr;
                    case "getHeader" -> h.get(((String) args[0]).toLowerCase(Locale.ROOT));
                    case "getHeaders" -> {
                        String v = h.get(((String) args[0]).toLowerCase(Locale.ROOT));
                        Enumeration<String> e = v == null ? Collections.emptyEnumeration() : Collections.enumeration(List.of(v));
                        yield e;
                    }
                    case "getAttribute" -> attributes.get((String) args[0]);
                    case "setAttribute" -> attributes.put((String) args[0], args[1]);
                    case "isAsyncSupported", "isAsyncStarted" -> false;
                    default -> throw new UnsupportedOperationException(method.getName());
                });
    }

    /**
     * A response that records its status and headers into {@code into} ("status" holds the status;
     * "committed" is set once {@code flushBuffer} has been called).
     */
    public static HttpServletResponse response(Map<String, String> into) {
        return (HttpServletResponse) Proxy.newProxyInstance(FakeServlet.class.getClassLoader(),
                new Class<?>[]{HttpServletResponse.class}, (proxy, method, args) -> switch (method.getName()) {
                    case "setStatus" -> into.put("status", args[0].toString());
                    case "getStatus" -> Integer.parseInt(into.getOrDefault("status", "200"));
                    case "setHeader" -> into.put((String) args[0], (String) args[1]);
                    case "getHeader" -> into.get((String) args[0]);
                    case "setContentType", "setContentLength" -> null;
                    case "getOutputStream" -> DISCARD;
                    case "resetBuffer" -> null; // nothing is buffered
                    case "flushBuffer" -> into.put("committed", "true");
                    case "isCommitted" -> into.containsKey("committed");
                    default -> throw new UnsupportedOperationException(method.getName());
                });
    }

    /** A chain that counts the requests it lets through. */
    public static final class CountingChain implements FilterChain {
        public long passed;

        @Override
        public void doFilter(jakarta.servlet.ServletRequest request, jakarta.servlet.ServletResponse response) {
            passed++;
        }
    }

    public static Map<String, String> params(String... kv) {
        Map<String, String> m = new LinkedHashMap<>();
        for (int i = 0; i + 1 < kv.length; i += 2) m.put(kv[i], kv[i + 1]);
        return m;
    }

    private static final ServletOutputStream DISCARD = new ServletOutputStream() {
        @Override
        public boolean isReady() {
            return true;
        }

        @Override
        public void setWriteListener(WriteListener writeListener) {
        }

        @Override
        public void write(int b) {
        }

        @Override
        public void write(byte[] b, int off, int len) {
        }
    };
}
