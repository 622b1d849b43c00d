//! Balanced community → client assignment (FedSage+ / FederatedScope δ-balancing with
//! the guards suggested in REFERENCE §5.5).
//!
//! With N nodes, K clients and slack δ:
//! 1. **Chunks.** Each community's nodes (ascending ids) are cut from the front into
//!    chunks of at most `N/K − δ` nodes (integer division); when `N/K − δ < 1` the chunk
//!    size is `max(1, N/K)` instead.
//! 2. **Order.** Chunks are sorted by size, descending; ties by first node id.
//! 3. **Round robin.** A pointer starts at client 0. For each chunk, the pointer skips
//!    clients for which `client size + chunk size > N/K + δ`, at most K times; the chunk
//!    goes to the client under the pointer, or — if all K probes failed — to the client
//!    that is currently smallest (lowest id on ties). The pointer then moves to the client
//!    after the one that received the chunk (FederatedScope's round robin).
//! 4. **No empty client.** While a client is empty (only possible with fewer chunks than
//!    clients; K ≤ N is checked by the caller), the largest chunk (ties: first node id)
//!    among those whose removal does not empty their client is split: its trailing
//!    ⌊size/2⌋ nodes become a new chunk given to the empty client (a chunk of one node is
//!    moved whole, from a client holding several chunks).

/// Chunk size for N nodes, K clients and slack δ (step 1).
pub fn chunk_size(n: usize, k: usize, delta: usize) -> usize {
    let per = n / k;
    if per > delta { per - delta } else { per.max(1) }
}

/// Assign the nodes of `communities` (community id of each node, ids 0..count) to `k`
/// clients. Returns the client of each node.
pub fn balance(community: &[u32], count: usize, k: usize, delta: usize) -> Vec<u32> {
    let n = community.len();
    assert!(k >= 1 && k <= n.max(1), "1 ≤ clients ≤ nodes is checked by the caller");
    let mut groups: Vec<Vec<usize>> = vec![Vec::new(); count];
    for (v, &c) in community.iter().enumerate() {
        groups[c as usize].push(v);
    }
    let size = chunk_size(n, k, delta);
    let mut chunks: Vec<Vec<usize>> = Vec::new();
    for g in groups {
        for piece in g.chunks(size) {
            chunks.push(piece.to_vec());
        }
    }
    chunks.sort_by(|a, b| b.len().cmp(&a.len()).then(a[0].cmp(&b[0])));
    let owners = assign_chunks(&chunks, k, n / k + delta);
    let owned = fill_empty(chunks, owners, k);
    let mut client = vec![u32::MAX; n];
    for (chunk, owner) in owned {
        for v in chunk {
            client[v] = owner as u32;
        }
    }
    client
}

/// Step 3: the client of each chunk (chunks in assignment order), with capacity `cap`.
fn assign_chunks(chunks: &[Vec<usize>], k: usize, cap: usize) -> Vec<usize> {
    let mut load = vec![0usize; k];
    let mut owners = Vec::with_capacity(chunks.len());
    let mut ptr = 0usize;
    for chunk in chunks {
        let len = chunk.len();
        let mut probes = 0;
        while load[ptr] + len > cap && probes < k {
            ptr = (ptr + 1) % k;
            probes += 1;
        }
        let target = if probes == k { (0..k).min_by_key(|&c| (load[c], c)).unwrap() } else { ptr };
        load[target] += len;
        owners.push(target);
        ptr = (target + 1) % k;
    }
    owners
}

/// Step 4: give every empty client part of the largest splittable chunk.
fn fill_empty(mut chunks: Vec<Vec<usize>>, mut owners: Vec<usize>, k: usize) -> Vec<(Vec<usize>, usize)> {
    loop {
        let mut count = vec![0usize; k]; // chunks per client
        for &o in &owners {
            count[o] += 1;
        }
        let Some(empty) = (0..k).find(|&c| count[c] == 0) else { break };
        let donor = (0..chunks.len())
            .filter(|&i| chunks[i].len() >= 2 || count[owners[i]] >= 2)
            .min_by(|&a, &b| chunks[b].len().cmp(&chunks[a].len()).then(chunks[a][0].cmp(&chunks[b][0])))
            .expect("with K ≤ N, some client holds two or more nodes while another is empty");
        if chunks[donor].len() >= 2 {
            let keep = chunks[donor].len() - chunks[donor].len() / 2;
            let tail = chunks[donor].split_off(keep);
            chunks.push(tail);
            owners.push(empty);
        } else {
            owners[donor] = empty;
        }
    }
    chunks.into_iter().zip(owners).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sizes(client: &[u32], k: usize) -> Vec<usize> {
        let mut s = vec![0; k];
        for &c in client {
            s[c as usize] += 1;
        }
        s
    }

    #[test]
    fn chunk_size_rule() {
        assert_eq!(chunk_size(2708, 10, 20), 250);
        assert_eq!(chunk_size(100, 5, 20), 20); // 20 − 20 = 0 < 1 → max(1, 20)
        assert_eq!(chunk_size(10, 5, 20), 2);
        assert_eq!(chunk_size(10, 10, 0), 1);
        assert_eq!(chunk_size(3, 3, 5), 1);
    }

    #[test]
    fn small_communities_stay_within_cap_and_whole() {
        // 60 communities of 5 nodes, 7 clients, δ = 5: cap = 300/7 + 5 = 47.
        let community: Vec<u32> = (0..300).map(|v| (v / 5) as u32).collect();
        let client = balance(&community, 60, 7, 5);
        let s = sizes(&client, 7);
        assert!(s.iter().all(|x| (1..=47).contains(x)), "{s:?}");
        assert_eq!(s.iter().sum::<usize>(), 300);
        // Each community (size 5 ≤ chunk size 37) lands on one client.
        for c in 0..60 {
            assert!((c * 5..c * 5 + 5).all(|v| client[v] == client[c * 5]));
        }
    }

    #[test]
    fn large_communities_are_chunked() {
        // Two communities of 50 and 50, 4 clients, δ = 5: chunks of 20 (2×20 + 10 each),
        // cap 30. Sorted: 20,20,20,20,10,10 → clients 0,1,2,3 then 10s to 0 and 1.
        let community: Vec<u32> = (0..100).map(|v| (v / 50) as u32).collect();
        let client = balance(&community, 2, 4, 5);
        assert_eq!(sizes(&client, 4), vec![30, 30, 20, 20]);
        assert!((0..20).all(|v| client[v] == 0));
        assert!((40..50).all(|v| client[v] == 0)); // the 10-node tail of community 0
        assert!((90..100).all(|v| client[v] == 1));
    }

    #[test]
    fn fallback_to_smallest_when_nothing_fits() {
        // δ = 0 with chunks 3,3,3 and cap 2·… : N = 9, K = 4, N/K = 2 → chunk 2, cap 2:
        // every chunk of 2 fits an empty client; the final 1-node chunk fits nowhere
        // (all loads 2) and goes to the smallest (client 0 on ties).
        let community: Vec<u32> = vec![0, 0, 0, 1, 1, 1, 2, 2, 2];
        let client = balance(&community, 3, 4, 0);
        let s = sizes(&client, 4);
        assert_eq!(s.iter().sum::<usize>(), 9);
        assert!(s.iter().all(|&x| x >= 1), "{s:?}");
        assert!(s.iter().all(|&x| x <= 3), "{s:?}");
    }

    #[test]
    fn empty_clients_are_filled_by_splitting_the_largest_chunk() {
        // Only two chunks (sizes 6 and 4) for five clients.
        let chunks = vec![vec![0, 1, 2, 3, 4, 5], vec![6, 7, 8, 9]];
        let owners = assign_chunks(&chunks, 5, 100);
        assert_eq!(owners, vec![0, 1]);
        let owned = fill_empty(chunks, owners, 5);
        let mut client = vec![usize::MAX; 10];
        for (chunk, o) in &owned {
            assert!(!chunk.is_empty());
            for &v in chunk {
                client[v] = *o;
            }
        }
        let mut s = vec![0; 5];
        for &c in &client {
            s[c] += 1;
        }
        assert!(s.iter().all(|&x| x >= 1), "{s:?}");
        assert_eq!(s.iter().sum::<usize>(), 10);
        // 6 → 3+3 (client 2), then 4 → 2+2 (client 3), then a 3 → 2+1 (client 4).
        assert_eq!(s, vec![2, 2, 3, 2, 1]);
        // A client holding several one-node chunks gives one away.
        let owned = fill_empty(vec![vec![0], vec![1], vec![2]], vec![0, 0, 0], 3);
        let mut owners: Vec<usize> = owned.iter().map(|(_, o)| *o).collect();
        owners.sort();
        assert_eq!(owners, vec![0, 1, 2]);
    }

    #[test]
    fn every_client_count_up_to_n_is_served() {
        let community: Vec<u32> = (0..23).map(|v| (v / 7) as u32).collect();
        for k in 1..=23 {
            for delta in [0, 1, 3, 20] {
                let client = balance(&community, 4, k, delta);
                let s = sizes(&client, k);
                assert!(s.iter().all(|&x| x >= 1), "k={k} δ={delta}: {s:?}");
                assert_eq!(s.iter().sum::<usize>(), 23);
            }
        }
    }
}
