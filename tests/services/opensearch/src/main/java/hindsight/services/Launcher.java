package hindsight.services;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;

import org.opensearch.common.logging.LogConfigurator;
import org.opensearch.common.settings.Settings;
import org.opensearch.env.Environment;
import org.opensearch.node.Node;
import org.opensearch.plugins.Plugin;

/**
 * Starts one OpenSearch node inside this JVM, with plugins taken from the classpath.
 *
 * <p>This is how OpenSearch's own integration tests run nodes: a {@link Node} subclass gets the
 * plugin classes directly instead of loading them from a plugins directory. Only for tests.
 *
 * <p>Arguments: {@code <home-dir> [http-port] [transport-port]}.
 */
public final class Launcher {

    /** Plugins every node here carries; k-NN is the reason the node exists. */
    private static final String[] PLUGIN_CLASSES = {
        "org.opensearch.transport.Netty4Plugin",
        "org.opensearch.painless.PainlessPlugin",
        "org.opensearch.analysis.common.CommonAnalysisPlugin",
        "org.opensearch.index.reindex.ReindexPlugin",
        "org.opensearch.knn.plugin.KNNPlugin",
    };

    /** A node whose plugins come from the classpath. */
    static final class ClasspathPluginNode extends Node {
        ClasspathPluginNode(Environment environment, List<Class<? extends Plugin>> plugins) {
            super(environment, plugins, true);
        }
    }

    private Launcher() {}

    public static void main(String[] args) throws Exception {
        if (args.length < 1) {
            System.err.println("usage: Launcher <home-dir> [http-port] [transport-port]");
            System.exit(2);
        }
        Path home = Path.of(args[0]).toAbsolutePath();
        String httpPort = args.length > 1 ? args[1] : "9200";
        String transportPort = args.length > 2 ? args[2] : "9300";
        Files.createDirectories(home.resolve("data"));
        Files.createDirectories(home.resolve("logs"));
        Files.createDirectories(home.resolve("config"));

        Settings settings = Settings.builder()
            .put("path.home", home.toString())
            .put("path.data", home.resolve("data").toString())
            .put("path.logs", home.resolve("logs").toString())
            .put("cluster.name", "hindsight-test")
            .put("node.name", "hindsight-test-node")
            .put("network.host", "127.0.0.1")
            .put("http.port", httpPort)
            .put("transport.port", transportPort)
            .put("transport.type", "netty4")
            .put("http.type", "netty4")
            .put("discovery.type", "single-node")
            .put("cluster.routing.allocation.disk.threshold_enabled", false)
            .put("action.auto_create_index", false)
            .put("logger.level", "INFO")
            .build();
        LogConfigurator.registerErrorListener();
        LogConfigurator.setNodeName("hindsight-test-node");
        LogConfigurator.configureWithoutConfig(settings);

        List<Class<? extends Plugin>> plugins = new ArrayList<>();
        for (String name : PLUGIN_CLASSES) {
            plugins.add(Class.forName(name).asSubclass(Plugin.class));
        }
        Environment environment = new Environment(settings, home.resolve("config"));
        Node node = new ClasspathPluginNode(environment, plugins);
        CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            try {
                node.close();
            } catch (Exception e) {
                System.err.println("error while closing the node: " + e);
            } finally {
                stopped.countDown();
            }
        }, "hindsight-node-shutdown"));
        try {
            node.start();
        } catch (Exception e) {
            System.err.println("the OpenSearch node failed to start: " + e);
            e.printStackTrace();
            System.exit(1);
        }
        System.out.println("HINDSIGHT-NODE-STARTED http://127.0.0.1:" + httpPort);
        stopped.await();
    }
}
