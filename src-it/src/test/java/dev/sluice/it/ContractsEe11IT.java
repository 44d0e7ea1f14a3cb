package dev.sluice.it;

import dev.sluice.it.support.ActualCostContract;
import dev.sluice.it.support.ConcurrencyContract;
import dev.sluice.it.support.Container;
import dev.sluice.it.support.EveryContainer;
import dev.sluice.it.support.LimitsPerClientContract;
import dev.sluice.it.support.MadeUpKeysContract;
import dev.sluice.it.support.RulePathsContract;

/**
 * The tests that run on every container ({@link EveryContainer}), those of concurrency rules and settled costs
 * ({@link ConcurrencyContract}, {@link ActualCostContract}: on every embedded container, and in dist-it on Tomcat 11),
 * {@link LimitsPerClientContract},
 * {@link RulePathsContract} and {@link MadeUpKeysContract}, on embedded Jetty 12.1 in the ee11 environment (Servlet 6.1).
 */
class ContractsEe11IT implements EveryContainer, ConcurrencyContract, ActualCostContract, LimitsPerClientContract, RulePathsContract, MadeUpKeysContract {

    private final Container container = new Embedded("Jetty 12.1 ee11 (embedded)", params -> WebApp.start(new JettyEe11(), params));

    @Override
    public Container container() {
        return container;
    }
}
