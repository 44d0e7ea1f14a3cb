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
 * {@link RulePathsContract} and {@link MadeUpKeysContract}, on embedded Undertow 2.3, WildFly's servlet container.
 */
class ContractsUndertowIT implements EveryContainer, ConcurrencyContract, ActualCostContract, LimitsPerClientContract, RulePathsContract, MadeUpKeysContract {

    private final Container container = new Embedded("Undertow 2.3 (embedded)", params -> UndertowWebApp.start(params));

    @Override
    public Container container() {
        return container;
    }
}
