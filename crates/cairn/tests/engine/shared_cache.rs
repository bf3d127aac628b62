//! One block cache shared by two databases (`Options::block_cache`): their tables have the
//! same file numbers (both start counting at the same place), and neither may be served
//! the other's blocks, index or filter.

use std::sync::Arc;

use cairn::cache::{BlockCache, LruBlockCache};
use cairn::{Db, Options, WriteOptions};

fn key(i: u32) -> Vec<u8> {
    format!("key{i:05}").into_bytes()
}

#[test]
fn two_databases_sharing_a_cache_read_their_own_data() {
    for meta in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let shared: Arc<dyn BlockCache> = Arc::new(LruBlockCache::new(8 << 20, 4));
        let opts = Options {
            block_cache: Some(shared.clone()),
            cache_index_and_filter_blocks: meta,
            ..Options::small()
        };
        let a = Db::open(dir.path().join("a"), opts.clone()).unwrap();
        let b = Db::open(dir.path().join("b"), opts).unwrap();
        let wo = WriteOptions::default();
        for i in 0..2000 {
            a.put(&wo, &key(i), format!("a{i}").as_bytes()).unwrap();
            // b holds every other key, so its blocks and filter differ from a's.
            if i % 2 == 0 {
                b.put(&wo, &key(i), format!("b{i}").as_bytes()).unwrap();
            }
        }
        a.flush().unwrap();
        b.flush().unwrap();
        for round in 0..2 {
            for i in (0..2000).step_by(7) {
                assert_eq!(
                    a.get(&key(i)).unwrap(),
                    Some(format!("a{i}").into_bytes()),
                    "a, round {round}"
                );
                let want = (i % 2 == 0).then(|| format!("b{i}").into_bytes());
                assert_eq!(b.get(&key(i)).unwrap(), want, "b, round {round}");
            }
        }
        assert!(shared.stats().hits > 0, "the cache was used");
    }
}
