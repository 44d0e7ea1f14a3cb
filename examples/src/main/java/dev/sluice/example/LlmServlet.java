package dev.sluice.example;

import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;

import java.io.IOException;
import java.util.concurrent.ThreadLocalRandom;

/**
 * A stand-in for an LLM endpoint, whose cost is known only once it has answered: {@code GET} or
 * {@code POST /llm/<anything>} answers a small completion and states the tokens it used in the
 * response header {@code X-Tokens-Used}, set before the body is written. {@code ?tokens=N} makes it
 * use N, at most {@link #MAX_TOKENS} (a completion's most, as a model's has: the cost an application
 * states is bounded by what a request can really cost, so a client's debt, and its Redis key, lasts
 * minutes, not years); without it, a pseudo-random 50 to 500. The example's
 * {@code rule.llm.max-actual-cost} is the same 8,000: a bound below what a request can really cost
 * would leave the rest of a costly request uncharged, so a client asking for the most every time
 * would get more tokens a minute than the limit.
 *
 * <p>The example's {@code llm} rule ({@code rule.llm.actual-cost = response-header:X-Tokens-Used})
 * takes its estimate at admission and, once the response is complete, charges the client the tokens
 * stated beyond it or gives back the difference.
 */
public class LlmServlet extends HttpServlet {

    private static final long serialVersionUID = 1L;
    static final long MAX_TOKENS = 8_000;

    @Override
    protected void doGet(HttpServletRequest req, HttpServletResponse resp) throws IOException {
        long tokens;
        try {
            tokens = req.getParameter("tokens") == null ? ThreadLocalRandom.current().nextLong(50, 501)
                    : Long.parseLong(req.getParameter("tokens"));
        } catch (NumberFormatException e) {
            tokens = -1;
        }
        if (tokens < 0 || tokens > MAX_TOKENS) {
            resp.sendError(HttpServletResponse.SC_BAD_REQUEST, "tokens: a whole number from 0 to " + MAX_TOKENS);
            return;
        }
        resp.setHeader("X-Tokens-Used", Long.toString(tokens));
        resp.setContentType("application/json");
        resp.getWriter().write("{\"completion\":\"Rate limits keep a shared service fair.\",\"tokens\":" + tokens + "}");
    }

    @Override
    protected void doPost(HttpServletRequest req, HttpServletResponse resp) throws IOException {
        doGet(req, resp);
    }
}
