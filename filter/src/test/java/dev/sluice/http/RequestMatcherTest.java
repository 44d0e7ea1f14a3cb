package dev.sluice.http;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class RequestMatcherTest {

    private static RequestMatcher matcher(String... entries) {
        return RequestMatcher.parse(List.of(entries));
    }

    @Test
    void patternWithoutStarMatchesThatPathWithOrWithoutOneTrailingSlash() {
        RequestMatcher login = matcher("POST /login");
        assertThat(login.matches("POST", "/login")).isTrue();
        assertThat(login.matches("POST", "/login/")).as("no bypass through /login/").isTrue();
        assertThat(login.matches("POST", "/login//")).isFalse();
        assertThat(login.matches("POST", "/login/x")).isFalse();
        assertThat(matcher("/login/").matches("GET", "/login")).as("either way round").isTrue();
        assertThat(matcher("/api/v1").matches("GET", "/api/v1/")).isTrue();
        assertThat(matcher("/api/v1").matches("GET", "/api/v")).isFalse();
    }

    /** Found by an attacker's review of 0.3: 53 of 100 password resets passed a limit of 3, every other one with a slash. */
    @Test
    void patternWithStarsMatchesAPathWithOneTrailingSlashAsWithout() {
        RequestMatcher reset = matcher("POST /users/*/password-reset");
        assertThat(reset.matches("POST", "/users/alice/password-reset")).isTrue();
        assertThat(reset.matches("POST", "/users/alice/password-reset/")).as("no bypass through a trailing slash").isTrue();
        assertThat(reset.matches("POST", "/users/alice/password-reset//")).as("one slash only, as a literal").isFalse();
        assertThat(reset.matches("POST", "/users/alice/password-reset/x")).isFalse();
        assertThat(matcher("/api/users/*").matches("GET", "/api/users/42/")).isTrue();
        assertThat(matcher("/api/users/*").matches("GET", "/api/users/42/x/")).isFalse();
        assertThat(matcher("/static/*.css").matches("GET", "/static/site.css/")).isTrue();
        assertThat(matcher("/api/**/orders").matches("GET", "/api/a/b/orders/")).isTrue();
        assertThat(matcher("/api/**/orders").matches("GET", "/api/a/b/orders/x/")).isFalse();
        assertThat(matcher("/*").matches("GET", "/")).isTrue();
    }

    /** Found by a second attacker's review of 0.3: a wildcard pattern written with a slash missed the path without it. */
    @Test
    void patternWithStarsAndATrailingSlashMatchesThePathWithOrWithoutIt() {
        RequestMatcher reset = matcher("POST /users/*/password-reset/");
        assertThat(reset.matches("POST", "/users/alice/password-reset")).as("no bypass by leaving the slash out").isTrue();
        assertThat(reset.matches("POST", "/users/alice/password-reset/")).isTrue();
        assertThat(reset.matches("POST", "/users/alice/password-reset//")).as("one slash only, as a literal").isFalse();
        assertThat(reset.matches("POST", "/users/alice/password-reset/x")).isFalse();
        assertThat(matcher("/api/*/").matches("GET", "/api/42")).isTrue();
        assertThat(matcher("/api/*/").matches("GET", "/api/42/x")).isFalse();
        assertThat(matcher("/api/**/").matches("GET", "/api/a/b")).isTrue();
        assertThat(matcher("/api/*/").toString()).as("the entry keeps its text").contains("/api/*/");
        assertThatThrownBy(() -> matcher("/api/*//")).hasMessageContaining("empty segment");
    }

    @Test
    void patternWithoutStarMatchesNothingElse() {
        RequestMatcher login = matcher("/login");
        assertThat(login.matches("GET", "/login")).isTrue();
        assertThat(login.matches("GET", "/login/x")).isFalse();
        assertThat(login.matches("GET", "/loginx")).isFalse();
        assertThat(login.matches("GET", "/Login")).as("paths are case-sensitive").isFalse();
    }

    @Test
    void rootPatternMatchesOnlyTheRoot() {
        assertThat(matcher("/").matches("GET", "/")).isTrue();
        assertThat(matcher("/").matches("GET", "")).as("an empty path is the root").isTrue();
        assertThat(matcher("/").matches("GET", "/a")).isFalse();
    }

    @Test
    void singleStarMatchesExactlyOneSegment() {
        RequestMatcher users = matcher("/users/*");
        assertThat(users.matches("GET", "/users/42")).isTrue();
        assertThat(users.matches("GET", "/users/")).isTrue();
        assertThat(users.matches("GET", "/users/42/orders")).isFalse();
        assertThat(users.matches("GET", "/usersx")).isFalse();
        assertThat(users.matches("GET", "/")).isFalse();
        assertThat(matcher("/users/*/orders").matches("GET", "/users/42/orders")).isTrue();
        assertThat(matcher("/users/*/orders").matches("GET", "/users/42/43/orders")).isFalse();
    }

    @Test
    void aTrailingStarMatchesThePathWithoutItsEmptyLastSegmentToo() {
        // /users/* matches /users/ (the star an empty segment), and a path without its one trailing
        // slash is served alike (a servlet mapped to /users/* serves /users): counted the same
        assertThat(matcher("POST /users/*").matches("POST", "/users")).isTrue();
        assertThat(matcher("/a/*/*").matches("GET", "/a/b")).isTrue();
        assertThat(matcher("/a/*/*").matches("GET", "/a")).isFalse();
        assertThat(matcher("/a/**/*").matches("GET", "/a")).isTrue();
        assertThat(matcher("/a/**/*").matches("GET", "/a/b/c")).isTrue();
        assertThat(matcher("/v*/*").matches("GET", "/v2")).isTrue();
        assertThat(matcher("/v*/*").matches("GET", "/x2")).isFalse();
        // a star with more in its segment matches no empty segment, so nothing changes there
        assertThat(matcher("/static/*.css").matches("GET", "/static")).isFalse();
        assertThat(matcher("/users/*").matches("GET", "/users//")).isFalse();
    }

    @Test
    void starInsideASegmentStaysWithinIt() {
        RequestMatcher css = matcher("/static/*.css");
        assertThat(css.matches("GET", "/static/site.css")).isTrue();
        assertThat(css.matches("GET", "/static/.css")).isTrue();
        assertThat(css.matches("GET", "/static/site.js")).isFalse();
        assertThat(css.matches("GET", "/static/a/site.css")).isFalse();
        RequestMatcher glob = matcher("/v*/items-*-x*");
        assertThat(glob.matches("GET", "/v2/items-7-x")).isTrue();
        assertThat(glob.matches("GET", "/v2/items-x")).as("pieces may not overlap").isFalse();
    }

    @Test
    void doubleStarMatchesAnyNumberOfSegmentsIncludingNone() {
        RequestMatcher api = matcher("/api/**");
        assertThat(api.matches("GET", "/api")).isTrue();
        assertThat(api.matches("GET", "/api/")).isTrue();
        assertThat(api.matches("GET", "/api/a")).isTrue();
        assertThat(api.matches("GET", "/api/a/b/c")).isTrue();
        assertThat(api.matches("GET", "/apix")).isFalse();
        assertThat(api.matches("GET", "/x/api/a")).isFalse();
    }

    @Test
    void doubleStarInTheMiddleBacktracks() {
        RequestMatcher m = matcher("/a/**/b/*.json");
        assertThat(m.matches("GET", "/a/b/x.json")).isTrue();
        assertThat(m.matches("GET", "/a/x/y/b/z.json")).isTrue();
        assertThat(m.matches("GET", "/a/b/b/b/z.json")).isTrue();
        assertThat(m.matches("GET", "/a/x/b/z.xml")).isFalse();
        assertThat(m.matches("GET", "/a/x/b/")).isFalse();
        assertThat(matcher("/**/*.css").matches("GET", "/deep/down/site.css")).isTrue();
    }

    @Test
    void slashDoubleStarMatchesEverything() {
        RequestMatcher all = matcher("/**");
        assertThat(all.matches("GET", "/")).isTrue();
        assertThat(all.matches("GET", "")).isTrue();
        assertThat(all.matches("DELETE", "/a/b/c")).isTrue();
    }

    @Test
    void methodIsCaseInsensitiveAndOptional() {
        RequestMatcher login = matcher("POST /login");
        assertThat(login.matches("POST", "/login")).isTrue();
        assertThat(login.matches("post", "/login")).isTrue();
        assertThat(login.matches("GET", "/login")).isFalse();
        assertThat(matcher("post /login").matches("POST", "/login")).isTrue();
        assertThat(matcher("/login").matches("PATCH", "/login")).isTrue();
    }

    @Test
    void severalMethodsAreJoinedWithBar() {
        RequestMatcher feed = matcher("GET|HEAD /feed");
        assertThat(feed.matches("HEAD", "/feed")).isTrue();
        assertThat(feed.matches("GET", "/feed")).isTrue();
        assertThat(feed.matches("POST", "/feed")).isFalse();
    }

    @Test
    void getAlsoMeansHeadBecauseServletsAnswerHeadFromDoGet() {
        RequestMatcher verify = matcher("GET /verify");
        assertThat(verify.matches("HEAD", "/verify")).isTrue();
        assertThat(verify.matches("head", "/verify")).isTrue();
        assertThat(verify.matches("GET", "/verify")).isTrue();
        assertThat(verify.matches("POST", "/verify")).isFalse();
        assertThat(matcher("POST|get /verify").matches("HEAD", "/verify")).isTrue();
        assertThat(matcher("POST /verify").matches("HEAD", "/verify")).as("only GET brings HEAD").isFalse();
        assertThat(matcher("HEAD /verify").matches("GET", "/verify")).as("not the other way round").isFalse();
        assertThat(verify.entries()).as("the entry as configured").containsExactly("GET /verify");
    }

    @Test
    void anyEntryMatchingIsEnough() {
        RequestMatcher m = matcher("POST /login", " /api/** ", "");
        assertThat(m.matches("POST", "/login")).isTrue();
        assertThat(m.matches("GET", "/api/x")).isTrue();
        assertThat(m.matches("GET", "/login")).isFalse();
    }

    @Test
    void emptyListMatchesNothing() {
        assertThat(RequestMatcher.parse(List.of()).matches("GET", "/")).isFalse();
        assertThat(RequestMatcher.parse(List.of()).isEmpty()).isTrue();
    }

    @ParameterizedTest
    @CsvSource(delimiter = ';', value = {
            "api/**;must start with /",
            "*;must start with /",
            "/api/***;** must be a whole path segment",
            "/api/**.json;** must be a whole path segment",
            "/a//b;empty segment",
            "POST GET /login;at most one method list",
            "GET,HEAD /x;join methods with |, not ,",
            "G*T /x;is not an HTTP method",
            "GET| /x;empty method",
            "POST;must start with /"})
    void badPatternsAreRejectedWithTheEntryAndTheAcceptedForms(String entry, String problem) {
        assertThatThrownBy(() -> matcher(entry))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("'" + entry + "'")
                .hasMessageContaining(problem)
                .hasMessageContaining("e.g. POST /login");
    }
}
