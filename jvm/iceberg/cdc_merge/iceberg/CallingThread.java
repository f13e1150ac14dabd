package cdc_merge.iceberg;

import java.util.concurrent.ExecutorService;
import org.apache.iceberg.relocated.com.google.common.util.concurrent.MoreExecutors;

/**
 * Iceberg's parallel steps run in the thread that asks for them.
 *
 * <p>Iceberg hands a commit's manifest filtering and merging, and a scan's planning, to its shared
 * worker pool and then polls that pool's tasks, sleeping 10 ms between polls (its Tasks.waitFor and
 * ParallelIterable). For the small tables and batches the helpers commit and scan, the work takes a
 * few milliseconds and the polls most of the time: 30-45 ms of a one-commit batch's commit
 * (docs/apply_service.md, "Iceberg's 10 ms polls"). Given this executor, a task runs as it is
 * submitted, so the first poll finds it done.
 */
final class CallingThread {
  static final ExecutorService EXECUTOR = MoreExecutors.newDirectExecutorService();

  private CallingThread() {}
}
