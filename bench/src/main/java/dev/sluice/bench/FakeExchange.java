package dev.sluice.bench;

import jakarta.servlet.DispatcherType;
import jakarta.servlet.FilterChain;
import jakarta.servlet.FilterConfig;
import jakarta.servlet.ServletContext;
import jakarta.servlet.ServletOutputStream;
import jakarta.servlet.ServletRequest;
import jakarta.servlet.ServletResponse;
import jakarta.servlet.WriteListener;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletRequestWrapper;
import jakarta.servlet.http.HttpServletResponse;
import jakarta.servlet.http.HttpServletResponseWrapper;
import jakarta.servlet.http.HttpSession;

import java.lang.reflect.Proxy;
import java.security.Principal;
import java.util.Collections;
import java.util.Enumeration;
import java.util.HashMap;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * A servlet request, response and chain as cheap as they can be, so that a benchmark of the
 * filter measures the filter. Reused: {@link #reset()} makes it a fresh request. The methods a
 * filter commonly calls are plain overrides; any other goes to a dynamic proxy that answers
 * null/0/false and is recorded in {@link #UNEXPECTED}, so a benchmark can tell when the filter
 * started calling something slow that this fake does not model.
 */
final class FakeExchange {

    /** Methods the filter called that are not modelled here (proxy calls: slow, so worth knowing). */
    static final Set<String> UNEXPECTED = ConcurrentHashMap.newKeySet();

    final Request request;
    final Response response = new Response();
    int chained;

    FakeExchange(String method, String path, String remoteAddr) {
        request = new Request(method, path, remoteAddr);
    }

    void reset() {
        request.attributes.clear();
        response.headers = 0;
        response.status = 200;
    }

    final FilterChain chain = (req, res) -> chained++;

    static FilterConfig filterConfig(String name, Map<String, String> params) {
        return new FilterConfig() {
            @Override
            public String getFilterName() {
                return name;
            }

            @Override
            public ServletContext getServletContext() {
                return unexpected(ServletContext.class);
            }

            @Override
            public String getInitParameter(String key) {
                return params.get(key);
            }

            @Override
            public Enumeration<String> getInitParameterNames() {
                return Collections.enumeration(params.keySet());
            }
        };
    }

    @SuppressWarnings("unchecked")
    private static <T> T unexpected(Class<T> type) {
        return (T) Proxy.newProxyInstance(FakeExchange.class.getClassLoader(), new Class<?>[]{type}, (p, m, args) -> {
            UNEXPECTED.add(type.getSimpleName() + "." + m.getName());
            Class<?> r = m.getReturnType();
            if (r == boolean.class) return false;
            if (r == int.class) return 0;
            if (r == long.class) return 0L;
            return null;
        });
    }

    static final class Request extends HttpServletRequestWrapper {
        final String method;
        final String path;
        final String remoteAddr;
        final Map<String, Object> attributes = new HashMap<>();
        /** The raw query string, {@code null} for none. */
        String queryString;

        Request(String method, String path, String remoteAddr) {
            super(unexpected(HttpServletRequest.class));
            this.method = method;
            this.path = path;
            this.remoteAddr = remoteAddr;
        }

        @Override public String getMethod() { return method; }
        @Override public String getRequestURI() { return path; }
        @Override public String getContextPath() { return ""; }
        @Override public String getServletPath() { return path; }
        @Override public String getPathInfo() { return null; }
        @Override public String getQueryString() { return queryString; }
        @Override public String getRemoteAddr() { return remoteAddr; }
        @Override public int getRemotePort() { return 40000; }
        @Override public String getHeader(String name) { return null; }
        @Override public Enumeration<String> getHeaders(String name) { return Collections.emptyEnumeration(); }
        @Override public Enumeration<String> getHeaderNames() { return Collections.emptyEnumeration(); }
        @Override public Object getAttribute(String name) { return attributes.get(name); }
        @Override public void setAttribute(String name, Object o) { attributes.put(name, o); }
        @Override public void removeAttribute(String name) { attributes.remove(name); }
        @Override public DispatcherType getDispatcherType() { return DispatcherType.REQUEST; }
        @Override public Principal getUserPrincipal() { return null; }
        @Override public HttpSession getSession(boolean create) { return null; }
        @Override public boolean isAsyncSupported() { return true; }
        @Override public boolean isAsyncStarted() { return false; }
        @Override public ServletRequest getRequest() { return this; }
    }

    static final class Response extends HttpServletResponseWrapper {
        final String[] names = new String[16];
        final String[] values = new String[16];
        int headers;
        int status = 200;
        final ServletOutputStream out = new ServletOutputStream() {
            @Override public boolean isReady() { return true; }
            @Override public void setWriteListener(WriteListener l) { }
            @Override public void write(int b) { }
            @Override public void write(byte[] b, int off, int len) { }
        };

        Response() {
            super(unexpected(HttpServletResponse.class));
        }

        private void put(String name, String value) {
            if (headers < names.length) {
                names[headers] = name;
                values[headers++] = value;
            }
        }

        @Override public void setHeader(String name, String value) { put(name, value); }
        @Override public void addHeader(String name, String value) { put(name, value); }
        @Override public void setIntHeader(String name, int value) { put(name, Integer.toString(value)); }
        @Override public void setStatus(int sc) { status = sc; }
        @Override public int getStatus() { return status; }
        @Override public void setContentType(String type) { }
        @Override public void setContentLength(int len) { }
        @Override public void setContentLengthLong(long len) { }
        @Override public void setCharacterEncoding(String charset) { }
        @Override public boolean isCommitted() { return false; }
        @Override public ServletOutputStream getOutputStream() { return out; }
        @Override public ServletResponse getResponse() { return this; }
    }
}
