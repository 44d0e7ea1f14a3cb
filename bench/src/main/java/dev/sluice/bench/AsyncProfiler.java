package dev.sluice.bench;

import com.sun.tools.attach.VirtualMachine;

import java.nio.file.Path;

/**
 * Sends one command ({@code start,...}, {@code stop,file=...}) to async-profiler in another JVM,
 * through the JDK's attach API: {@code VirtualMachine.loadAgentPath(lib, command)}, which is what
 * async-profiler's own launcher does. The target loads the library once (or has it from
 * {@code -agentpath}); every later load runs the command.
 */
final class AsyncProfiler {

    private AsyncProfiler() {
    }

    static void command(long pid, Path library, String command) throws Exception {
        VirtualMachine vm = VirtualMachine.attach(Long.toString(pid));
        try {
            vm.loadAgentPath(library.toString(), command);
        } finally {
            vm.detach();
        }
    }
}
