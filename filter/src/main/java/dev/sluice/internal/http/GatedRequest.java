package dev.sluice.internal.http;

import jakarta.servlet.RequestDispatcher;
import jakarta.servlet.ServletException;
import jakarta.servlet.ServletRequest;
import jakarta.servlet.ServletRequestWrapper;
import jakarta.servlet.ServletResponse;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletRequestWrapper;
import jakarta.servlet.http.HttpServletResponse;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.Objects;

/**
 * The request the filter hands on: its {@link #getRequestDispatcher} returns dispatchers that pass
 * the target path through a {@link Gate} (the rules that path newly matches decide) before they
 * forward or include, so a forward or include reaches the rules whether or not the filter's mapping
 * lists {@code FORWARD} and {@code INCLUDE}. A refused dispatch never reaches its target: the gate
 * has answered in its place. As Tomcat's own filters do, this wraps the request; the container
 * keeps inserting its own dispatch wrappers beneath or above it.
 *
 * <p>The dispatchers of {@code ServletContext} ({@code getRequestDispatcher}, {@code getNamedDispatcher})
 * are out of any request wrapper's reach, and so are those of a forwarded or included request on a
 * container that wraps it outside this one (Jetty, whose wrapper's dispatchers are the context's);
 * a mapping that lists {@code FORWARD} and {@code INCLUDE} covers them.
 */
public abstract class GatedRequest extends HttpServletRequestWrapper {

    /** Where a dispatch is decided before it goes on. */
    public interface Gate {

        /**
         * Decides the rules that {@code path} matches and that have not decided this client request
         * yet, then runs {@code target} if they admit it (else answers on {@code response} in its place).
         */
        void dispatch(HttpServletRequest request, HttpServletResponse response, String path, Target target)
                throws IOException, ServletException;
    }

    /** The dispatch itself, run once admitted. */
    public interface Target {
        void run() throws IOException, ServletException;
    }

    protected GatedRequest(HttpServletRequest request) {
        super(request);
    }

    /**
     * {@code request}, its dispatches decided by {@code gate}. (A subclass can be its own gate: the
     * filter's record of a client request wraps the request of its first dispatch, one object where
     * there would be two on every request.)
     */
    public static GatedRequest of(HttpServletRequest request, Gate gate) {
        Objects.requireNonNull(gate, "gate");
        return new GatedRequest(request) {
            @Override
            protected Gate gate() {
                return gate;
            }
        };
    }

    /** Where this request's dispatches are decided. */
    protected abstract Gate gate();

    /** Whether {@code request} is, or wraps, a gated request (its dispatchers are gated already). */
    public static boolean isGated(ServletRequest request) {
        return request instanceof GatedRequest
                || request instanceof ServletRequestWrapper w && w.isWrapperFor(GatedRequest.class);
    }

    @Override
    public RequestDispatcher getRequestDispatcher(String path) {
        RequestDispatcher target = super.getRequestDispatcher(path);
        return target == null || path == null ? target : new GatedDispatcher(target, path);
    }

    private final class GatedDispatcher implements RequestDispatcher {
        private final RequestDispatcher target;
        private final String path;

        GatedDispatcher(RequestDispatcher target, String path) {
            this.target = target;
            this.path = path;
        }

        @Override
        public void forward(ServletRequest request, ServletResponse response) throws ServletException, IOException {
            if (!(request instanceof HttpServletRequest http) || !(response instanceof HttpServletResponse httpResponse)) {
                target.forward(request, response);
                return;
            }
            if (response.isCommitted()) {
                // as the container's forward would: nothing reaches the target
                throw new IllegalStateException("Cannot forward after the response has been committed");
            }
            gate().dispatch(http, httpResponse, targetPath(path, http),
                    () -> target.forward(request, response));
        }

        @Override
        public void include(ServletRequest request, ServletResponse response) throws ServletException, IOException {
            if (!(request instanceof HttpServletRequest http) || !(response instanceof HttpServletResponse httpResponse)) {
                target.include(request, response);
                return;
            }
            gate().dispatch(http, httpResponse, targetPath(path, http),
                    () -> target.include(request, response));
        }
    }

    /**
     * The path within the application that a dispatch to {@code path} reaches, as the {@code match}
     * patterns see it: relative to the current path if relative, without its query, its {@code ;}
     * parameters and its {@code .} segments, decoded (as Tomcat and Jetty map dispatch paths);
     * {@code ..} above the root stays in the path (the container finds no target for it).
     */
    static String targetPath(String path, HttpServletRequest current) {
        int query = path.indexOf('?');
        String p = query < 0 ? path : path.substring(0, query);
        if (!p.startsWith("/")) {
            String base = currentPath(current);
            p = base.substring(0, base.lastIndexOf('/') + 1) + p;
        }
        Deque<String> segments = new ArrayDeque<>();
        boolean trailingSlash = p.endsWith("/");
        for (String raw : p.split("/")) {
            int params = raw.indexOf(';');
            String segment = decode(params < 0 ? raw : raw.substring(0, params));
            if (segment.isEmpty() || segment.equals(".")) continue;
            if (segment.equals("..")) {
                if (segments.isEmpty()) return p; // above the root: no dispatcher will reach it
                segments.removeLast();
                continue;
            }
            segments.addLast(segment);
        }
        if (segments.isEmpty()) return "/";
        StringBuilder normal = new StringBuilder(p.length());
        for (String s : segments) normal.append('/').append(s);
        if (trailingSlash) normal.append('/');
        return normal.toString();
    }

    /** The path the current dispatch runs: an include's own, else the request's. */
    public static String currentPath(HttpServletRequest request) {
        Object includedServlet = request.getAttribute(RequestDispatcher.INCLUDE_SERVLET_PATH);
        if (includedServlet instanceof String servletPath) {
            Object pathInfo = request.getAttribute(RequestDispatcher.INCLUDE_PATH_INFO);
            return pathInfo instanceof String info ? servletPath + info : servletPath;
        }
        String servletPath = request.getServletPath();
        String pathInfo = request.getPathInfo();
        String joined = (servletPath == null ? "" : servletPath) + (pathInfo == null ? "" : pathInfo);
        return joined.isEmpty() ? "/" : joined;
    }

    /** Percent-decoding as UTF-8; a malformed escape is kept as it is. */
    private static String decode(String segment) {
        if (segment.indexOf('%') < 0) return segment;
        ByteArrayOutputStream bytes = new ByteArrayOutputStream(segment.length());
        for (int i = 0; i < segment.length(); ) {
            int hi = i + 2 < segment.length() && segment.charAt(i) == '%' ? Character.digit(segment.charAt(i + 1), 16) : -1;
            int lo = hi < 0 ? -1 : Character.digit(segment.charAt(i + 2), 16);
            if (lo >= 0) {
                bytes.write(hi << 4 | lo);
                i += 3;
            } else {
                int end = i + Character.charCount(segment.codePointAt(i));
                byte[] b = segment.substring(i, end).getBytes(StandardCharsets.UTF_8);
                bytes.write(b, 0, b.length);
                i = end;
            }
        }
        return bytes.toString(StandardCharsets.UTF_8);
    }
}
