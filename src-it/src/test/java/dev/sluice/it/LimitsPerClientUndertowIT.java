package dev.sluice.it;

import java.util.Map;

/** {@link LimitsPerClientContract} on embedded Undertow 2.3 (WildFly's servlet container). */
class LimitsPerClientUndertowIT extends LimitsPerClientContract {

    @Override
    DeployedWar start(Map<String, String> params) throws Exception {
        return UndertowWebApp.start(params);
    }
}
