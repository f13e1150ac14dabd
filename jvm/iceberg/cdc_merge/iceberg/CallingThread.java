package cdc_merge.iceberg;

import java.util.concurrent.ExecutorService;
import org.apache.iceberg.relocated.com.google.common.util.concurrent.MoreExecutors;

/**
 * A commit's parallel steps, and a data file's position deletes read in the driver
 * ({@link CallingThreadRecords}), run in the thread that asks for them.
 *
 * <p>Iceberg hands a commit's manifest filtering, merging and apply to its shared worker pool and
 * then polls the pool's tasks, sleeping 10 ms between polls (its Tasks.waitFor). For the small
 * batches the helpers commit, the work takes a few milliseconds and the polls most of the time:
 * 30-45 ms of a one-commit batch's commit (docs/apply_service.md, "Iceberg's 10 ms polls"). Given
 * this executor ({@code scanManifestsWith}), a task runs as it is submitted, so the first poll finds
 * it done. Not for scans: their ParallelIterable sleeps whenever a round of its tasks returned no
 * file, done or not; the session plans scans without the pool instead
 * (python_jobs/landing/io/session.py local_driver_conf).
 */
final class CallingThread {
  static final ExecutorService EXECUTOR = MoreExecutors.newDirectExecutorService();

  private CallingThread() {}
}
