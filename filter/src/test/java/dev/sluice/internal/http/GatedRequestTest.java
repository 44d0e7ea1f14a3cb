package dev.sluice.internal.http;

import dev.sluice.testing.FakeServlet;
import jakarta.servlet.RequestDispatcher;
import jakarta.servlet.http.HttpServletRequest;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

class GatedRequestTest {

    private static final HttpServletRequest AT_SIGNIN = FakeServlet.get("/account/signin", "192.0.2.1");

    @Test
    void anAbsoluteTargetIsThePathTheRulesSee() {
        assertThat(GatedRequest.targetPath("/login", AT_SIGNIN)).isEqualTo("/login");
        assertThat(GatedRequest.targetPath("/login?next=/x", AT_SIGNIN)).isEqualTo("/login");
        assertThat(GatedRequest.targetPath("/api/x/", AT_SIGNIN)).as("a trailing slash kept").isEqualTo("/api/x/");
    }

    @Test
    void aRelativeTargetResolvesAgainstTheCurrentPath() {
        assertThat(GatedRequest.targetPath("login", AT_SIGNIN)).isEqualTo("/account/login");
        assertThat(GatedRequest.targetPath("../login", AT_SIGNIN)).isEqualTo("/login");
        HttpServletRequest inInclude = FakeServlet.get("/page", "192.0.2.1");
        inInclude.setAttribute(RequestDispatcher.INCLUDE_SERVLET_PATH, "/parts/menu");
        assertThat(GatedRequest.targetPath("login", inInclude)).as("an include's own path").isEqualTo("/parts/login");
    }

    @Test
    void aTargetIsDecodedAndNormalizedAsTheContainerMapsIt() {
        assertThat(GatedRequest.targetPath("/%6Cogin", AT_SIGNIN)).isEqualTo("/login");
        assertThat(GatedRequest.targetPath("//api/./x", AT_SIGNIN)).isEqualTo("/api/x");
        assertThat(GatedRequest.targetPath("/static/../login", AT_SIGNIN)).isEqualTo("/login");
        assertThat(GatedRequest.targetPath("/login;jsessionid=1", AT_SIGNIN)).isEqualTo("/login");
        assertThat(GatedRequest.targetPath("/caf%C3%A9/%zz", AT_SIGNIN)).as("UTF-8; a bad escape kept").isEqualTo("/café/%zz");
        assertThat(GatedRequest.targetPath("/../login", AT_SIGNIN)).as("above the root: no target").isEqualTo("/../login");
    }
}
