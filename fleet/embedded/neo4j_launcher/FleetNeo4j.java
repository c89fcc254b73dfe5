import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.atomic.AtomicReference;
import org.neo4j.configuration.Config;
import org.neo4j.configuration.GraphDatabaseSettings;
import org.neo4j.configuration.connectors.BoltConnector;
import org.neo4j.configuration.connectors.BoltConnectorInternalSettings;
import org.neo4j.configuration.connectors.HttpConnector;
import org.neo4j.configuration.helpers.SocketAddress;
import org.neo4j.dbms.api.DatabaseManagementService;
import org.neo4j.dbms.api.DatabaseManagementServiceBuilder;
import org.neo4j.graphdb.GraphDatabaseService;
import org.neo4j.io.ByteUnit;
import org.neo4j.io.fs.DefaultFileSystemAbstraction;
import org.neo4j.kernel.impl.security.User;
import org.neo4j.logging.NullLogProvider;
import org.neo4j.memory.EmptyMemoryTracker;
import org.neo4j.server.security.SecureHasher;
import org.neo4j.server.security.SystemGraphCredential;
import org.neo4j.server.security.auth.CommunitySecurityModule;
import org.neo4j.server.security.auth.FileUserRepository;
import org.neo4j.string.UTF8;

/**
 * Fleet's private Neo4j: Community Edition embedded in a small JVM, reachable over Bolt only.
 *
 * <p>Usage: {@code java -Xmx512m -cp "lib/*:classes" FleetNeo4j <home> <port> [pagecacheMiB]}.
 * The server binds Bolt to 127.0.0.1:port (never another interface: the password guards a
 * loopback server), keeps its databases and logs under home, and prints one line starting with
 * {@code FLEET-NEO4J READY} once a client can log in. The user and password come from the
 * environment ({@code FLEET_NEO4J_USER}, default neo4j, and {@code FLEET_NEO4J_PASSWORD}), so
 * they never appear in a process listing or in this program's output. SIGTERM runs the shutdown
 * hook, which stops the databases cleanly (a checkpoint, then the store files are closed); a
 * SIGKILL leaves a store that recovers from its transaction log on the next start.
 *
 * <p>Bolt accepts logins seconds before the databases have started (7 s measured on two cores).
 * On a first start the built-in user {@code neo4j} would have Neo4j's well-known password
 * {@code neo4j} then, so anyone on the machine could log in and change it, and the configured
 * password would be refused. So before the first start this writes the initial user file, as
 * {@code neo4j-admin dbms set-initial-password} does: the user {@code neo4j} exists with the
 * configured password from the start. Another configured user is created once the system
 * database answers; until then its logins fail, which the READY line waits out. The built-in
 * user keeps the configured password too, whichever user is configured.
 *
 * <p>A later start with another password has the same window the other way: the old password
 * would log in until the databases answer. So a start whose password is not the one the server
 * last took (kept as Neo4j's own salted hash in {@code data/dbms/fleet-password}, mode 0600)
 * first sets it with Bolt closed, stops, and only then opens Bolt, in the same JVM (0.4-2.4 s
 * more on two cores), only when the password changes or no record says which it was.
 */
public final class FleetNeo4j {
  private FleetNeo4j() {}

  public static void main(String[] args) throws Exception {
    if (args.length < 2) {
      System.err.println("usage: FleetNeo4j <home> <port> [pagecacheMiB]");
      System.exit(2);
    }
    Path home = Path.of(args[0]).toAbsolutePath();
    int port = Integer.parseInt(args[1]);
    long pagecacheMib = args.length > 2 ? Long.parseLong(args[2]) : 256L;
    String user = System.getenv().getOrDefault("FLEET_NEO4J_USER", "neo4j");
    String password = System.getenv("FLEET_NEO4J_PASSWORD");
    if (password == null || password.length() < 8) {
      // Neo4j refuses shorter passwords (dbms.security.auth_minimum_password_length).
      System.err.println("FLEET_NEO4J_PASSWORD must be set, 8 characters or more");
      System.exit(2);
    }
    Config config = Config.newBuilder().set(GraphDatabaseSettings.neo4j_home, home).build();
    Path data = config.get(GraphDatabaseSettings.data_directory);
    Path initialUsers = CommunitySecurityModule.getInitialUserRepositoryFile(config);
    Path taken = data.resolve("dbms").resolve("fleet-password");
    AtomicReference<DatabaseManagementService> running = new AtomicReference<>();
    Runtime.getRuntime()
        .addShutdownHook(
            new Thread(
                () -> {
                  DatabaseManagementService it = running.get();
                  if (it != null) {
                    it.shutdown();
                  }
                },
                "fleet-neo4j-shutdown"));
    if (!Files.exists(data.resolve("databases").resolve("system"))) {
      setInitialPassword(initialUsers, password);
    } else if (!takes(taken, password)) {
      // A new password: set with Bolt closed, so that the old one never logs in.
      running.set(builder(home, port, pagecacheMib, false).build());
      setUsers(running.get().database("system"), user, password);
      running.getAndSet(null).shutdown();
    }
    running.set(builder(home, port, pagecacheMib, true).build());
    GraphDatabaseService system = running.get().database("system");
    setUsers(system, user, password);
    record(taken, password);
    // Read when the system database was made; a hash of the password. Also a killed first
    // start's, which a later start did not write.
    Files.deleteIfExists(initialUsers);
    System.out.println("FLEET-NEO4J READY bolt://127.0.0.1:" + port);
    System.out.flush();
    Thread.currentThread().join();
  }

  private static DatabaseManagementServiceBuilder builder(
      Path home, int port, long pagecacheMib, boolean bolt) {
    return new DatabaseManagementServiceBuilder(home)
        .setConfig(BoltConnector.enabled, bolt)
        .setConfig(BoltConnector.listen_address, new SocketAddress("127.0.0.1", port))
        .setConfig(BoltConnector.advertised_address, new SocketAddress("127.0.0.1", port))
        .setConfig(HttpConnector.enabled, false)
        .setConfig(GraphDatabaseSettings.auth_enabled, true)
        .setConfig(GraphDatabaseSettings.pagecache_memory, ByteUnit.mebiBytes(pagecacheMib))
        // Transaction log files are preallocated at their full rotation size (256 MiB)
        // by default: a test session's servers would take gigabytes of disk for nothing.
        .setConfig(GraphDatabaseSettings.preallocate_logical_logs, false)
        .setConfig(GraphDatabaseSettings.logical_log_rotation_threshold, ByteUnit.mebiBytes(32))
        // Bolt waits 5 s for open connections on shutdown by default; Fleet closes its
        // driver before it stops the server, so a stop need not wait for anyone (the
        // store files are checkpointed and closed before Bolt stops).
        .setConfig(BoltConnectorInternalSettings.connection_shutdown_wait_time, Duration.ofMillis(500))
        .setConfig(BoltConnectorInternalSettings.thread_pool_shutdown_wait_time, Duration.ofMillis(500));
  }

  /**
   * Before a first start (no system database yet), give the built-in user the configured
   * password instead of Neo4j's default, through the initial user file the system database
   * reads once, when it is created.
   */
  private static void setInitialPassword(Path file, String password) throws Exception {
    try (DefaultFileSystemAbstraction fs = new DefaultFileSystemAbstraction()) {
      fs.deleteFile(file); // an earlier first start's, killed before its databases began
      FileUserRepository users =
          new FileUserRepository(fs, file, NullLogProvider.getInstance(), EmptyMemoryTracker.INSTANCE);
      users.start();
      SystemGraphCredential credential =
          SystemGraphCredential.createCredentialForPassword(UTF8.encode(password), new SecureHasher());
      users.create(new User("neo4j", null, credential, false, false));
      users.shutdown();
    }
  }

  /** Whether {@code password} is the one the server last took, as {@code record} kept it. */
  private static boolean takes(Path taken, String password) throws Exception {
    if (!Files.exists(taken)) {
      return false;
    }
    try {
      return SystemGraphCredential.deserialize(Files.readString(taken).strip(), new SecureHasher())
          .matchesPassword(UTF8.encode(password));
    } catch (Exception e) { // unreadable: as if there were no record
      return false;
    }
  }

  /** Keep Neo4j's salted hash of the password the server has taken, readable by its owner. */
  private static void record(Path taken, String password) throws Exception {
    String credential =
        SystemGraphCredential.createCredentialForPassword(UTF8.encode(password), new SecureHasher())
            .serialize();
    Path next = taken.resolveSibling(taken.getFileName() + ".next");
    Files.deleteIfExists(next);
    Files.createFile(next, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
    Files.writeString(next, credential + "\n");
    Files.move(next, taken, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
  }

  /**
   * The configured user exists and has the configured password (a restart may bring a new one),
   * and so does the built-in user {@code neo4j}, which a first start gave the password: left
   * alone, it would keep an old one for good.
   */
  private static void setUsers(GraphDatabaseService system, String user, String password) {
    system.executeTransactionally(
        "CREATE USER $u IF NOT EXISTS SET PASSWORD $p CHANGE NOT REQUIRED",
        Map.of("u", user, "p", password));
    setPassword(system, user, password);
    if (!user.equals("neo4j")) {
      boolean builtIn =
          system.executeTransactionally(
              "SHOW USERS YIELD user WHERE user = 'neo4j' RETURN count(*) AS n",
              Map.of(),
              r -> ((Number) r.next().get("n")).longValue() > 0);
      if (builtIn) {
        setPassword(system, "neo4j", password);
      }
    }
  }

  /** Set the password; the same one again is no change. */
  private static void setPassword(GraphDatabaseService system, String user, String password) {
    try {
      system.executeTransactionally(
          "ALTER USER $u SET PASSWORD $p CHANGE NOT REQUIRED", Map.of("u", user, "p", password));
    } catch (RuntimeException e) {
      String why = String.valueOf(e.getMessage());
      if (!why.contains("cannot be the same")) {
        throw e;
      }
    }
  }
}
