//! Platform-level tests of `streamcore-hip` on a real (or HIP-on-CUDA)
//! device, under a runner of their own (`runner.rs`): without a runtime or
//! device each device test reports `SKIPPED: <reason>` and is counted as
//! skipped, never as passed. The constructor's `NotAvailable` path is
//! tested by `not_available`, which runs everywhere.

mod bounds;
mod common;
mod devices;
mod faults;
mod graph;
mod kernel;
mod not_available;
mod runner;
mod smoke;
mod sticky;
mod storage;
mod vmm;

fn main() -> std::process::ExitCode {
    runner::main(tests![
        not_available::constructor_without_runtime_is_not_available,
        not_available::error_kind_is_what_the_core_matches_on,
        not_available::each_injected_status_is_of_the_kind_asked_for,
        not_available::a_runtime_lacking_entry_points_is_a_typed_error,
        not_available::a_runtime_that_cannot_be_loaded_says_why,
        not_available::a_runtime_with_a_fault_switch_is_driven_through_it,
        not_available::device_tests_without_runtime_count_as_skipped,
        smoke::properties_come_from_the_driver,
        smoke::events_pass_and_stay_passed,
        smoke::round_trip_through_device_with_offsets,
        smoke::wait_orders_work_across_streams,
        smoke::a_wait_keeps_its_record_when_the_event_is_reused,
        storage::device_pages_are_distinct_aligned_and_freed_on_flush,
        storage::out_of_memory_is_typed_and_changes_nothing,
        storage::host_pages_refuse_out_of_range_access,
        storage::copies_refuse_host_ranges_outside_live_pages_and_mismatched_lengths,
        kernel::kernel_from_source_adds_two_buffers,
        kernel::compile_errors_are_typed_with_the_log,
        kernel::a_missing_entry_point_is_typed,
        kernel::too_many_bindings_are_refused,
        kernel::an_oversized_block_is_a_recoverable_launch_failure,
        graph::captured_graph_replays_with_fresh_inputs,
        graph::host_sync_during_capture_is_refused_and_invalidates_it,
        graph::capture_calls_out_of_order_are_rejected,
        graph::dropping_a_capturing_stream_ends_its_capture,
        graph::storage_flush_during_capture_is_deferred,
        vmm::the_device_storage_is_chosen_at_run_time,
        vmm::vmm_pages_are_whole_granules_that_hold_bytes,
        vmm::reservations_commit_and_decommit_in_place,
        vmm::out_of_memory_on_commit_is_typed_and_changes_nothing,
        vmm::nothing_is_mapped_or_unmapped_inside_a_capture,
        faults::a_refused_map_or_access_releases_the_chunk,
        faults::a_mapping_that_will_not_go_is_released_with_its_range,
        faults::a_refused_unmap_keeps_the_chunk_usable,
        faults::a_failed_release_is_retried_by_the_flush,
        faults::a_failed_address_free_is_retried_by_the_flush,
        faults::a_pool_on_the_device_rides_out_refused_calls,
        faults::plain_pages_ride_out_refused_calls,
        faults::streams_events_and_copies_ride_out_refused_calls,
        sticky::sticky_error_stays_in_the_child,
        bounds::device_ranges_outside_live_device_pages_are_refused,
        bounds::launches_pass_exactly_the_declared_bindings,
        bounds::a_launch_with_many_bindings_passes_each_in_order,
        devices::a_platform_on_device_1_works_from_fresh_threads;
        not_available::child_constructor_without_runtime,
        sticky::child_illegal_address,
    ])
}
