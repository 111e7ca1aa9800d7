package cohort.bench;

import java.io.BufferedWriter;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import software.amazon.event.ruler.Machine;

/**
 * Event Ruler's side of bench/eventruler.sh.
 *
 * <pre>
 *   match RULES EVENTS OUT    every event's matching rules, one line each:
 *                             "EVENT\tR1,R2,..." (rule and event numbers are
 *                             0-based line numbers, the rules ascending);
 *                             the rules Event Ruler refuses, "RULE\tmessage"
 *                             a line, in OUT.refused
 *   time RULES EVENTS N REPS  loads the first N rules (one thread), then
 *                             matches every event REPS times; prints one
 *                             line: rules, load seconds, median ns per
 *                             event over the reps, the spread (min, max),
 *                             matches per event
 * </pre>
 *
 * RULES and EVENTS hold one JSON document per line. Rule i is added as
 * `addRule(String.valueOf(i), line)`; events are matched with
 * `rulesForJSONEvent`, the call Event Ruler recommends.
 */
public final class RulerDriver {
  private RulerDriver() {}

  private static List<String> lines(String file) throws IOException {
    List<String> out = new ArrayList<>();
    for (String line : Files.readAllLines(Path.of(file), StandardCharsets.UTF_8)) {
      if (!line.isBlank()) out.add(line);
    }
    return out;
  }

  /**
   * Adds rules 0..n-1; those Event Ruler refuses go to `refused`. Prints
   * "loaded K rules in S s" to stderr every 100,000 rules, so that a load
   * stopped by a time limit still says how far it got.
   */
  private static Machine load(List<String> rules, int n, List<String> refused) {
    Machine machine = new Machine();
    long start = System.nanoTime();
    for (int i = 0; i < n; i++) {
      if (i > 0 && i % 100000 == 0) {
        System.err.printf("loaded %d rules in %.1f s%n", i, (System.nanoTime() - start) / 1e9);
      }
      try {
        machine.addRule(String.valueOf(i), rules.get(i));
      } catch (Exception e) {
        refused.add(i + "\t" + e.getMessage().replace('\n', ' '));
      }
    }
    return machine;
  }

  private static int[] matches(Machine machine, String event) throws Exception {
    List<String> names = machine.rulesForJSONEvent(event);
    int[] ids = new int[names.size()];
    for (int i = 0; i < ids.length; i++) ids[i] = Integer.parseInt(names.get(i));
    Arrays.sort(ids);
    return ids;
  }

  private static void match(String rulesFile, String eventsFile, String out) throws Exception {
    List<String> rules = lines(rulesFile);
    List<String> events = lines(eventsFile);
    List<String> refused = new ArrayList<>();
    Machine machine = load(rules, rules.size(), refused);
    Files.write(Path.of(out + ".refused"), refused, StandardCharsets.UTF_8);
    try (BufferedWriter w = Files.newBufferedWriter(Path.of(out), StandardCharsets.UTF_8)) {
      for (int e = 0; e < events.size(); e++) {
        int[] ids = matches(machine, events.get(e));
        StringBuilder line = new StringBuilder().append(e).append('\t');
        for (int i = 0; i < ids.length; i++) {
          if (i > 0) line.append(',');
          line.append(ids[i]);
        }
        w.write(line.append('\n').toString());
      }
    }
  }

  private static void time(String rulesFile, String eventsFile, int n, int reps) throws Exception {
    List<String> rules = lines(rulesFile);
    List<String> events = lines(eventsFile);
    n = Math.min(n, rules.size());
    long start = System.nanoTime();
    List<String> refused = new ArrayList<>();
    Machine machine = load(rules, n, refused);
    double loadSeconds = (System.nanoTime() - start) / 1e9;
    // One untimed pass warms the JIT.
    long total = 0;
    for (String event : events) total += matches(machine, event).length;
    double[] perEvent = new double[reps];
    for (int r = 0; r < reps; r++) {
      long t0 = System.nanoTime();
      for (String event : events) machine.rulesForJSONEvent(event);
      perEvent[r] = (double) (System.nanoTime() - t0) / events.size();
    }
    Arrays.sort(perEvent);
    System.out.printf("rules %d refused %d load_s %.3f ns_per_event_median %.0f min %.0f max %.0f"
            + " matches_per_event %.2f%n",
        n, refused.size(), loadSeconds, perEvent[reps / 2], perEvent[0], perEvent[reps - 1],
        (double) total / events.size());
  }

  public static void main(String[] args) throws Exception {
    if (args.length == 4 && args[0].equals("match")) {
      match(args[1], args[2], args[3]);
    } else if (args.length == 5 && args[0].equals("time")) {
      time(args[1], args[2], Integer.parseInt(args[3]), Integer.parseInt(args[4]));
    } else {
      System.err.println("usage: RulerDriver match RULES EVENTS OUT"
          + " | time RULES EVENTS N REPS");
      System.exit(2);
    }
  }
}
